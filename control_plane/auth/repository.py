"""Queries over users, session families, refresh tokens, email tokens and impersonation codes.

Raw tokens never reach the database: rows hold their SHA-256 (``security.hash_token``).
Single use is enforced by conditional updates (``… WHERE used_at IS NULL``), so two concurrent
requests with the same token cannot both succeed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, or_, select, update
from sqlalchemy.orm import Session

from control_plane.access.registry import FamilyInfo
from control_plane.auth.models import EmailToken, ImpersonationCode, RefreshToken, SessionFamily
from control_plane.db import utcnow
from control_plane.org.models import Membership, Organization
from control_plane.security import hash_token, random_token
from control_plane.user.models import User
from shared.ids import new_id


def _changed(result: Any) -> bool:
    return cast(CursorResult[Any], result).rowcount == 1


# --------------------------------------------------------------------------- users
def get_user(db: Session, user_id: str) -> User | None:
    return db.get(User, user_id)


def get_user_by_email(db: Session, email: str) -> User | None:
    return db.scalar(select(User).where(User.email == email))


def add_user(db: Session, email: str, password_hash: str, name: str | None) -> User:
    user = User(id=new_id("usr"), email=email, password_hash=password_hash, name=name)
    db.add(user)
    db.flush()
    return user


# --------------------------------------------------------------------------- email tokens
def add_email_token(db: Session, user_id: str, purpose: str, ttl_seconds: int) -> str:
    raw = random_token()
    db.add(EmailToken(
        id=new_id("etk"), user_id=user_id, purpose=purpose, token_hash=hash_token(raw),
        expires_at=utcnow() + timedelta(seconds=ttl_seconds),
    ))
    db.flush()
    return raw


def live_email_token(db: Session, raw: str, purpose: str) -> EmailToken | None:
    """The token when it is known, of this purpose, unused and unexpired (nothing is marked)."""
    row = db.scalar(select(EmailToken).where(EmailToken.token_hash == hash_token(raw)))
    if row is None or row.purpose != purpose or row.used_at is not None or row.expires_at <= utcnow():
        return None
    return row


def consume_email_token(db: Session, raw: str, purpose: str) -> EmailToken | None:
    """The live token, now marked used; None when unknown, of another purpose, used or expired."""
    row = live_email_token(db, raw, purpose)
    if row is None:
        return None
    result = db.execute(
        update(EmailToken).where(EmailToken.id == row.id, EmailToken.used_at.is_(None)).values(used_at=utcnow())
    )
    return row if _changed(result) else None


def expire_email_tokens(db: Session, user_id: str, purpose: str) -> None:
    db.execute(
        update(EmailToken)
        .where(EmailToken.user_id == user_id, EmailToken.purpose == purpose, EmailToken.used_at.is_(None))
        .values(used_at=utcnow())
    )


# --------------------------------------------------------------------------- session families
def add_family(
    db: Session,
    user_id: str,
    user_agent: str | None,
    ip: str | None,
    impersonated_by: str | None = None,
    expires_at: datetime | None = None,
    org_id: str | None = None,
) -> SessionFamily:
    family = SessionFamily(
        id=new_id("fam"), user_id=user_id, user_agent=(user_agent or None) and user_agent[:500],
        ip=ip, impersonated_by=impersonated_by, expires_at=expires_at, org_id=org_id,
    )
    db.add(family)
    db.flush()
    return family


def get_family(db: Session, family_id: str) -> SessionFamily | None:
    return db.get(SessionFamily, family_id)


def _live_families_query(user_id: str):  # type: ignore[no-untyped-def]
    now = utcnow()
    return select(SessionFamily).where(
        SessionFamily.user_id == user_id,
        SessionFamily.revoked_at.is_(None),
        or_(SessionFamily.expires_at.is_(None), SessionFamily.expires_at > now),
    )


def live_families(db: Session, user_id: str, offset: int = 0, limit: int | None = None) -> Sequence[SessionFamily]:
    query = _live_families_query(user_id).order_by(SessionFamily.created_at.desc(), SessionFamily.id)
    query = query.offset(offset)
    if limit is not None:
        query = query.limit(limit)
    return db.scalars(query).all()


def mark_revoked(db: Session, family_ids: Sequence[str]) -> None:
    if family_ids:
        db.execute(
            update(SessionFamily)
            .where(SessionFamily.id.in_(family_ids), SessionFamily.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )


# --------------------------------------------------------------------------- refresh tokens
def add_refresh_token(db: Session, family_id: str, ttl_seconds: int) -> str:
    raw = random_token()
    db.add(RefreshToken(
        id=new_id("rtk"), family_id=family_id, token_hash=hash_token(raw),
        expires_at=utcnow() + timedelta(seconds=ttl_seconds),
    ))
    db.flush()
    return raw


def find_refresh_token(db: Session, raw: str) -> RefreshToken | None:
    return db.scalar(select(RefreshToken).where(RefreshToken.token_hash == hash_token(raw)))


def mark_rotated(db: Session, token_id: str) -> bool:
    """True when this call rotated the token; False when another request already had."""
    result = db.execute(
        update(RefreshToken)
        .where(RefreshToken.id == token_id, RefreshToken.rotated_at.is_(None))
        .values(rotated_at=utcnow())
    )
    return _changed(result)


def touch_family(db: Session, family_id: str) -> None:
    db.execute(update(SessionFamily).where(SessionFamily.id == family_id).values(last_used_at=utcnow()))


# --------------------------------------------------------------------------- impersonation
def get_organization(db: Session, org_id: str) -> Organization | None:
    return db.get(Organization, org_id)


def org_owner_id(db: Session, org_id: str) -> str | None:
    return db.scalar(
        select(Membership.user_id)
        .where(Membership.org_id == org_id, Membership.role == "owner")
        .order_by(Membership.created_at, Membership.user_id)
        .limit(1)
    )


def add_impersonation_code(db: Session, org_id: str, issued_by: str, ttl_seconds: int) -> str:
    raw = random_token()
    db.add(ImpersonationCode(
        id=new_id("imp"), org_id=org_id, code_hash=hash_token(raw), issued_by=issued_by,
        expires_at=utcnow() + timedelta(seconds=ttl_seconds),
    ))
    db.flush()
    return raw


def consume_impersonation_code(db: Session, raw: str) -> ImpersonationCode | None:
    row = db.scalar(select(ImpersonationCode).where(ImpersonationCode.code_hash == hash_token(raw)))
    now = utcnow()
    if row is None or row.used_at is not None or row.expires_at <= now:
        return None
    result = db.execute(
        update(ImpersonationCode)
        .where(ImpersonationCode.id == row.id, ImpersonationCode.used_at.is_(None))
        .values(used_at=now)
    )
    return row if _changed(result) else None


def family_info(db: Session, family_id: str) -> FamilyInfo | None:
    """The family as the access layer checks a session token against it."""
    row = db.get(SessionFamily, family_id)
    if row is None:
        return None
    return FamilyInfo(user_id=row.user_id, revoked_at=row.revoked_at, impersonated_by=row.impersonated_by,
                      org_id=row.org_id, expires_at=row.expires_at)
