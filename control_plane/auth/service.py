"""Accounts: registration, email verification, password reset and change, the signed-in user.

Functions that must email someone return a :class:`Mail` instead of sending it, so the endpoint
sends it after the transaction commits (and off the request path: an unknown email on
forgot-password answers as fast as a known one). ``links`` is the base of the links they hold
(:func:`control_plane.public_url.links_base`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from control_plane.access.caller import Principal
from control_plane.auth import repository as repo
from control_plane.auth.models import SessionFamily
from control_plane.auth.sessions import hashing_turn, revoke_families, verify_counted
from control_plane.db import utcnow
from control_plane.email_address import lookup_key, normalize_email
from control_plane.org.service import create_organization
from control_plane.runtime import Runtime
from control_plane.user.models import User
from shared.errors import ServiceError, conflict, not_found, unauthenticated, validation

VERIFY = "verify"
RESET = "reset"


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    body: str


def _verification_mail(links: str, user: User, token: str) -> Mail:
    link = f"{links}/verify-email?token={token}"  # a cabinet page that verifies
    return Mail(user.email, "Verify your shopsearch email address",
                f"Welcome to shopsearch.\n\nConfirm your email address by opening this link:\n{link}\n")


def _reset_mail(links: str, user: User, token: str) -> Mail:
    link = f"{links}/reset-password?token={token}"  # a cabinet form that posts reset-password
    return Mail(user.email, "Reset your shopsearch password",
                "Someone asked to reset the password of this shopsearch account.\n"
                f"Open this link to choose a new password:\n{link}\n\n"
                "If it wasn't you, ignore this email.\n")


def register(
    db: Session, runtime: Runtime, links: str, email: str, password: str, name: str | None, org_name: str | None
) -> tuple[User, Mail]:
    email = normalize_email(email)
    with runtime.hashing.admit() as hashing:
        if repo.get_user_by_email(db, email) is not None:
            raise conflict("An account with this email already exists")
        db.commit()  # no connection waits on the hash
        password_hash = hashing.hash(password)
    try:
        user = repo.add_user(db, email, password_hash, name)
    except IntegrityError as exc:  # a concurrent registration won the race
        raise conflict("An account with this email already exists") from exc
    create_organization(db, org_name or f"{name or email.split('@')[0]}'s organization", user.id)
    token = repo.add_email_token(db, user.id, VERIFY, runtime.settings.email_token_ttl_seconds)
    return user, _verification_mail(links, user, token)


def _bad_token() -> Exception:
    return validation("The token is invalid, used or expired", [{"path": "token", "message": "invalid token"}])


def verify_email(db: Session, token: str) -> None:
    row = repo.consume_email_token(db, token, VERIFY)
    if row is None:
        raise _bad_token()
    user = repo.get_user(db, row.user_id)
    if user is None:
        raise _bad_token()
    if user.email_verified_at is None:
        user.email_verified_at = utcnow()
    db.flush()


def resend_verification(db: Session, runtime: Runtime, links: str, user_id: str) -> Mail | None:
    """A fresh verification email (earlier links stop working); None when already verified."""
    user = current_user(db, user_id)
    if user.email_verified_at is not None:
        return None
    repo.expire_email_tokens(db, user.id, VERIFY)
    token = repo.add_email_token(db, user.id, VERIFY, runtime.settings.email_token_ttl_seconds)
    return _verification_mail(links, user, token)


def forgot_password(db: Session, runtime: Runtime, links: str, email: str) -> Mail | None:
    """A reset email when the account exists and the per-email limit allows one; never an error."""
    user = repo.get_user_by_email(db, lookup_key(email))
    if user is None:
        return None
    try:
        runtime.limiter.hit(runtime.settings.login_limit_per_email, "forgot-email", user.email)
    except ServiceError:  # over the limit: silently send nothing
        return None
    token = repo.add_email_token(db, user.id, RESET, runtime.settings.email_token_ttl_seconds)
    return _reset_mail(links, user, token)


def reset_password(db: Session, runtime: Runtime, token: str, password: str) -> None:
    """Hashes only for a live token, holding no connection meanwhile; single use is decided after."""
    with runtime.hashing.admit() as hashing:
        if repo.live_email_token(db, token, RESET) is None:
            raise _bad_token()
        db.commit()
        password_hash = hashing.hash(password)
    row = repo.consume_email_token(db, token, RESET)
    user = repo.get_user(db, row.user_id) if row is not None else None
    if user is None:
        raise _bad_token()
    user.password_hash = password_hash
    if user.email_verified_at is None:  # the reset proved control of the mailbox
        user.email_verified_at = utcnow()
    repo.expire_email_tokens(db, user.id, RESET)
    revoke_families(db, runtime, repo.live_families(db, user.id))
    db.flush()


def change_password(
    db: Session, runtime: Runtime, principal: Principal, current_password: str, new_password: str
) -> None:
    """Wrong current password → 400 VALIDATION_ERROR (a 401 would read as "session expired");
    failures count in the sign-in limit of the user's email."""
    user = current_user(db, principal.user_id)
    counted = (runtime.attempts.reserve(runtime.settings.login_limit_per_email, "login-email", user.email),)
    with hashing_turn(runtime, counted) as hashing:
        if not verify_counted(db, hashing, counted, user.password_hash, current_password):
            raise validation("The current password is wrong",
                             [{"path": "currentPassword", "message": "wrong password"}])
        password_hash = hashing.hash(new_password)
    user.password_hash = password_hash
    others = [f for f in repo.live_families(db, user.id) if f.id != principal.family_id]
    revoke_families(db, runtime, others)
    db.flush()


def current_user(db: Session, user_id: str | None) -> User:
    user = repo.get_user(db, user_id) if user_id else None
    if user is None:
        raise unauthenticated("The account no longer exists")
    return user


def current_family(db: Session, principal: Principal) -> SessionFamily:
    family = repo.get_family(db, principal.family_id) if principal.family_id else None
    if family is None:
        raise not_found("Session")
    return family
