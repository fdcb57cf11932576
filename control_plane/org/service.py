"""Organizations and their members."""

from __future__ import annotations

from sqlalchemy.orm import Session

from control_plane.org.models import Membership, Organization
from shared.ids import new_id


def create_organization(db: Session, name: str, owner_user_id: str, plan: str = "free") -> Organization:
    """A new organization owned by ``owner_user_id`` (used by register and the operator CLI)."""
    org = Organization(id=new_id("org"), name=name, plan=plan)
    db.add(org)
    db.flush()
    db.add(Membership(org_id=org.id, user_id=owner_user_id, role="owner"))
    db.flush()
    return org
