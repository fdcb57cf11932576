"""Sessions: sign-in, refresh-token rotation with theft detection, sign-out, listing, impersonation.

A session family is one sign-in. Its refresh tokens form a chain: each refresh rotates the
presented token and issues the next. Presenting a token that was already rotated means two
parties hold the chain (a stolen cookie), so the whole family is revoked and its access tokens
stop working at once on every instance (shared-state revocation + ``revoked_at``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.orm import Session

from control_plane.access.caller import Principal, impersonation_expiry, revoke_family
from control_plane.auth import repository as repo
from control_plane.auth.models import SessionFamily
from control_plane.db import utcnow
from control_plane.email_address import lookup_key
from control_plane.hashing import Admitted
from control_plane.runtime import Runtime
from control_plane.security import issue_access_token
from control_plane.state import Reservation
from control_plane.user.models import User
from control_plane.wire import decode_int_cursor, encode_cursor
from shared.errors import ErrorCode, ServiceError, forbidden, not_found, unauthenticated

IMPERSONATION_CODE_TTL_SECONDS = 600


@dataclass(frozen=True)
class SignIn:
    user: User
    access_token: str
    expires_in: int
    refresh_token: str | None = None


def revoke_families(db: Session, runtime: Runtime, families: Iterable[SessionFamily]) -> None:
    ids = [f.id for f in families]
    for family_id in ids:
        revoke_family(runtime, family_id)
    repo.mark_revoked(db, ids)


def _access_token(runtime: Runtime, family: SessionFamily, ttl: int | None = None) -> tuple[str, int]:
    settings = runtime.settings
    return issue_access_token(
        settings.signing_key(), family.user_id, family.id, ttl or settings.access_token_ttl_seconds
    )


@contextmanager
def hashing_turn(runtime: Runtime, reservations: Sequence[Reservation]) -> Iterator[Admitted]:
    """A turn to hash for an attempt already counted in ``reservations`` (so over a limit is 429
    whatever the load); a 503 — too many waiting, no password was tried — gives them back."""
    try:
        with runtime.hashing.admit() as hashing:
            yield hashing
    except ServiceError as exc:
        if exc.code is ErrorCode.UNAVAILABLE:
            _give_back(reservations)
        raise


def verify_counted(db: Session, hashing: Admitted, reservations: Sequence[Reservation],
                   password_hash: str | None, password: str) -> bool:
    """Verify a password whose attempt is counted in ``reservations``; a right one gives them back
    (only failures count). The request's transaction ends first: no connection waits on the hash."""
    db.commit()
    verified = hashing.verify(password_hash, password)
    if verified:
        _give_back(reservations)
    return verified


def _give_back(reservations: Sequence[Reservation]) -> None:
    for reservation in reservations:
        reservation.give_back()


def login(db: Session, runtime: Runtime, email: str, password: str, user_agent: str | None, ip: str) -> SignIn:
    """Failed attempts count per IP and per email, before the password is checked: once either
    limit is used up → 429, so no more checks than the limits allow run, however many arrive at once."""
    settings = runtime.settings
    email = lookup_key(email)
    counted = (runtime.attempts.reserve(settings.login_limit_per_ip, "login-ip", ip),
               runtime.attempts.reserve(settings.login_limit_per_email, "login-email", email))
    with hashing_turn(runtime, counted) as hashing:
        user = repo.get_user_by_email(db, email)
        verified = verify_counted(db, hashing, counted, user.password_hash if user else None, password)
    if not verified or user is None:
        raise unauthenticated("Wrong email or password")
    family = repo.add_family(db, user.id, user_agent, ip)
    refresh = repo.add_refresh_token(db, family.id, settings.refresh_token_ttl_seconds)
    token, expires_in = _access_token(runtime, family)
    return SignIn(user, token, expires_in, refresh)


def _family_is_live(family: SessionFamily | None) -> bool:
    if family is None or family.revoked_at is not None:
        return False
    return family.expires_at is None or family.expires_at > utcnow()


def _revoke_after_theft(db: Session, runtime: Runtime, family_id: str) -> None:
    """Revoke in a transaction of its own: the request's transaction rolls back with the 401.

    The request's transaction is ended first so that it holds no lock (SQLite has one writer).
    """
    revoke_family(runtime, family_id)
    db.rollback()
    with runtime.sessions.begin() as own:
        repo.mark_revoked(own, [family_id])


def refresh(db: Session, runtime: Runtime, raw: str | None) -> SignIn:
    invalid = unauthenticated("Missing, invalid or expired refresh token")
    row = repo.find_refresh_token(db, raw) if raw else None
    if row is None:
        raise invalid
    family = repo.get_family(db, row.family_id)
    if family is None or not _family_is_live(family):
        raise invalid
    if row.rotated_at is not None or not repo.mark_rotated(db, row.id):
        _revoke_after_theft(db, runtime, family.id)
        raise unauthenticated("Refresh token reused; the session was revoked")
    if row.expires_at <= utcnow():
        raise invalid
    repo.touch_family(db, family.id)
    user = repo.get_user(db, family.user_id)
    if user is None:
        raise invalid
    new_refresh = repo.add_refresh_token(db, family.id, runtime.settings.refresh_token_ttl_seconds)
    token, expires_in = _access_token(runtime, family)
    return SignIn(user, token, expires_in, new_refresh)


def logout(db: Session, runtime: Runtime, raw: str | None) -> None:
    row = repo.find_refresh_token(db, raw) if raw else None
    family = repo.get_family(db, row.family_id) if row else None
    if family is not None and family.revoked_at is None:
        revoke_families(db, runtime, [family])


# --------------------------------------------------------------------------- listing and ending
def _decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    return decode_int_cursor(cursor)


def list_sessions(
    db: Session, principal: Principal, limit: int, cursor: str | None
) -> tuple[Sequence[SessionFamily], str | None]:
    assert principal.user_id is not None
    offset = _decode_cursor(cursor)
    rows = repo.live_families(db, principal.user_id, offset, limit + 1)
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = encode_cursor(str(offset + limit))
    return rows, next_cursor


def end_session(db: Session, runtime: Runtime, principal: Principal, family_id: str) -> None:
    """Another user's family is simply not found; ending an already ended one is a no-op."""
    family = repo.get_family(db, family_id)
    if family is None or family.user_id != principal.user_id:
        raise not_found("Session")
    if family.revoked_at is None:
        revoke_families(db, runtime, [family])


# --------------------------------------------------------------------------- impersonation
def issue_impersonation_code(db: Session, org_id: str, issued_by: str) -> str:
    """A one-time code for the operator CLI; only its hash is stored."""
    if repo.get_organization(db, org_id) is None:
        raise not_found("Organization")
    return repo.add_impersonation_code(db, org_id, issued_by, IMPERSONATION_CODE_TTL_SECONDS)


def impersonate(db: Session, runtime: Runtime, code: str, user_agent: str | None, ip: str) -> SignIn:
    """A session as the organization's owner that ends at ``family.expires_at`` and reaches only
    that organization (the owner's other organizations answer 404 to it).

    No refresh cookie: the access token lives as long as the impersonation itself, so support
    staff never hold a refresh chain of a customer's account.
    """
    row = repo.consume_impersonation_code(db, code)
    owner_id = repo.org_owner_id(db, row.org_id) if row else None
    user = repo.get_user(db, owner_id) if owner_id else None
    if row is None or user is None:
        raise unauthenticated("Invalid, used or expired impersonation code")
    ttl = runtime.settings.impersonation_ttl_seconds
    family = repo.add_family(db, user.id, user_agent, ip, impersonated_by=row.issued_by,
                             expires_at=impersonation_expiry(runtime), org_id=row.org_id)
    token, expires_in = _access_token(runtime, family, ttl)
    return SignIn(user, token, expires_in)


def exit_impersonation(db: Session, runtime: Runtime, principal: Principal) -> None:
    if not principal.impersonating or principal.family_id is None:
        raise forbidden("This session is not an impersonation")
    family = repo.get_family(db, principal.family_id)
    if family is not None:
        revoke_families(db, runtime, [family])
