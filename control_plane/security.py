"""Credentials: password hashing (argon2), token hashing, signed access tokens, key generation."""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from control_plane.db import utcnow

_hasher = PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    """A fixed hash verified when the email is unknown, so both failures take the same time. Made by
    :func:`prepare_password_checks` when an app is built, not at import: an argon2 hash is ~0.2 s,
    which the CLI and ``serve``'s supervisor need not pay."""
    return _hasher.hash("not-a-real-password-0")


def prepare_password_checks() -> None:
    """Before the first sign-in: its unknown-email check must not be slower by the hash's making."""
    _dummy_hash()


SECRET_KEY_PREFIX = "ss_sk_"
PUBLIC_KEY_PREFIX = "ss_pk_"


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def hash_token(token: str) -> str:
    """Tokens and keys are 256-bit random values, so a plain SHA-256 is a safe stored form."""
    return hashlib.sha256(token.encode()).hexdigest()


def random_token() -> str:
    return secrets.token_urlsafe(32)


def new_api_key(key_type: str) -> str:
    prefix = SECRET_KEY_PREFIX if key_type == "secret" else PUBLIC_KEY_PREFIX
    return prefix + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class AccessClaims:
    user_id: str
    family_id: str
    expires_at: datetime


def issue_access_token(signing_key: str, user_id: str, family_id: str, ttl_seconds: int) -> tuple[str, int]:
    expires = utcnow() + timedelta(seconds=ttl_seconds)
    token = jwt.encode(
        {"sub": user_id, "fid": family_id, "exp": expires, "typ": "access"}, signing_key, algorithm="HS256"
    )
    return token, ttl_seconds


def decode_access_token(signing_key: str, token: str) -> AccessClaims | None:
    try:
        claims = jwt.decode(token, signing_key, algorithms=["HS256"], options={"require": ["exp", "sub", "fid"]})
    except jwt.PyJWTError:
        return None
    if claims.get("typ") != "access":
        return None
    return AccessClaims(
        user_id=str(claims["sub"]),
        family_id=str(claims["fid"]),
        expires_at=datetime.fromtimestamp(claims["exp"]).astimezone(),
    )
