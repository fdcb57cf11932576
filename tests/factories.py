"""Test data made straight in the database, so tests of one domain don't depend on another's routes.

``make_account`` creates a user (verified by default), an organization they own and a signed-in
session; ``make_project`` and ``make_key`` add a project and an API key.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from control_plane.api_key.models import ApiKey
from control_plane.auth.models import SessionFamily
from control_plane.db import utcnow
from control_plane.org.models import Membership
from control_plane.org.service import create_organization
from control_plane.project.models import Project
from control_plane.runtime import Runtime
from control_plane.security import hash_password, hash_token, issue_access_token, new_api_key
from control_plane.user.models import User
from shared.ids import new_id

PASSWORD = "correct horse battery"
_PASSWORD_HASH = hash_password(PASSWORD)


@dataclass
class Account:
    user_id: str
    email: str
    org_id: str
    token: str
    family_id: str
    password: str = PASSWORD
    projects: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def runtime_of(app) -> Runtime:  # type: ignore[no-untyped-def]
    return app.state.runtime  # type: ignore[no-any-return]


def sign_in(  # type: ignore[no-untyped-def]
    app, user_id: str, impersonated_by: str | None = None, org_id: str | None = None
) -> tuple[str, str]:
    """A session of ``user_id``; an impersonation (``impersonated_by``) reaches only ``org_id``."""
    runtime = runtime_of(app)
    with runtime.sessions.begin() as db:
        family = SessionFamily(id=new_id("fam"), user_id=user_id, user_agent="pytest", ip="127.0.0.1",
                               impersonated_by=impersonated_by, org_id=org_id)
        db.add(family)
    token, _ = issue_access_token(runtime.settings.signing_key(), user_id, family.id,
                                  runtime.settings.access_token_ttl_seconds)
    return token, family.id


def make_account(app, verified: bool = True, org_name: str = "Acme") -> Account:  # type: ignore[no-untyped-def]
    runtime = runtime_of(app)
    email = f"user-{secrets.token_hex(5)}@example.com"
    with runtime.sessions.begin() as db:
        user = User(id=new_id("usr"), email=email, name="Test User", password_hash=_PASSWORD_HASH,
                    email_verified_at=utcnow() if verified else None)
        db.add(user)
        db.flush()
        org = create_organization(db, org_name, user.id)
    token, family_id = sign_in(app, user.id)
    return Account(user_id=user.id, email=email, org_id=org.id, token=token, family_id=family_id)


def add_member(app, account: Account, role: str) -> Account:  # type: ignore[no-untyped-def]
    """Another verified user with ``role`` in ``account``'s organization."""
    other = make_account(app, org_name="Other")
    with runtime_of(app).sessions.begin() as db:
        db.add(Membership(org_id=account.org_id, user_id=other.user_id, role=role))
    other.org_id = account.org_id
    return other


def make_project(app, account: Account, name: str | None = None) -> str:  # type: ignore[no-untyped-def]
    with runtime_of(app).sessions.begin() as db:
        project = Project(id=new_id("prj"), org_id=account.org_id, name=name or f"shop-{secrets.token_hex(3)}")
        db.add(project)
    account.projects.append(project.id)
    return project.id


def make_key(  # type: ignore[no-untyped-def]
    app,
    project_id: str,
    key_type: str = "secret",
    access: str | None = "full",
    index_id: str | None = None,
    allowed_origins: list[str] | None = None,
    expires_in: timedelta | None = None,
) -> str:
    """Creates a key row directly and returns the full key string."""
    raw = new_api_key(key_type)
    with runtime_of(app).sessions.begin() as db:
        db.add(ApiKey(
            id=new_id("key"), project_id=project_id, type=key_type, name="test key",
            access=access if key_type == "secret" else None, index_id=index_id,
            allowed_origins=allowed_origins or [], prefix=raw[:12], key_hash=hash_token(raw),
            expires_at=utcnow() + expires_in if expires_in is not None else None,
        ))
    return raw


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
