"""API keys of a project (spec 4.10). The full key is returned once; only its SHA-256 is stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from control_plane.api_key import repository
from control_plane.api_key.models import ApiKey
from control_plane.auth import repository as users
from control_plane.db import utcnow
from control_plane.origins import parse_pattern
from control_plane.security import hash_token, new_api_key
from shared.errors import ErrorCode, ServiceError, not_found, validation
from shared.ids import new_id

PREFIX_LENGTH = 12


@dataclass(frozen=True)
class NewKey:
    type: str
    name: str
    access: str | None = None
    index_id: str | None = None
    allowed_origins: list[str] | None = None
    expires_at: datetime | None = None


def normalize_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` or ``https://*.example.com`` in canonical form (see
    :mod:`control_plane.origins`), or None when not an origin."""
    pattern = parse_pattern(origin)
    return str(pattern) if pattern is not None else None


def _validate(db: Session, project_id: str, spec: NewKey) -> tuple[list[str], datetime | None]:
    details: list[dict[str, Any]] = []
    origins: list[str] = []
    if spec.type == "secret":
        if spec.access is None:
            details.append({"path": "access", "message": "required for a secret key: read or full"})
        if spec.allowed_origins:
            details.append({"path": "allowedOrigins", "message": "only public keys have allowed origins"})
    else:
        if spec.access is not None:
            details.append({"path": "access", "message": "only secret keys have an access level"})
        if spec.index_id is not None:
            details.append({"path": "indexId", "message": "only secret keys can be limited to an index"})
        if not spec.allowed_origins:
            details.append({"path": "allowedOrigins", "message": "a public key needs at least one allowed origin"})
        for i, origin in enumerate(spec.allowed_origins or []):
            normalized = normalize_origin(origin)
            if normalized is None:
                details.append({
                    "path": f"allowedOrigins[{i}]",
                    "message": "expected scheme://host[:port] or https://*.example.com",
                })
            elif normalized not in origins:
                origins.append(normalized)
    expires_at = spec.expires_at
    if expires_at is not None:
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        if expires_at <= utcnow():
            details.append({"path": "expiresAt", "message": "must be in the future"})
    if details:
        raise validation("The key request is not valid", details)
    if spec.index_id is not None and repository.index_in_project(db, project_id, spec.index_id) is False:
        raise not_found("Index")
    return origins, expires_at


def live_keys_named(db: Session, project_id: str, prefix: str) -> Sequence[ApiKey]:
    """The project's live keys whose name starts with ``prefix`` (the demo's keys)."""
    return repository.live_keys_named(db, project_id, prefix)


def create_key(db: Session, project_id: str, user_id: str, spec: NewKey) -> tuple[ApiKey, str]:
    """A new key and its full string (shown once). The creating user must have a confirmed email."""
    user = users.get_user(db, user_id)
    if user is None or user.email_verified_at is None:
        raise ServiceError(ErrorCode.EMAIL_NOT_VERIFIED, "Confirm your email address before creating API keys")
    return create_key_unchecked(db, project_id, spec, created_by=user_id)


def create_key_unchecked(db: Session, project_id: str, spec: NewKey, created_by: str | None) -> tuple[ApiKey, str]:
    """Creates the key without the email check (the operator CLI)."""
    if spec.type not in ("secret", "public"):
        raise validation("Unknown key type", [{"path": "type", "message": "secret or public"}])
    name = spec.name.strip()
    if not name or len(name) > 200:
        raise validation("A key name has 1 to 200 characters", [{"path": "name", "message": "1-200 characters"}])
    origins, expires_at = _validate(db, project_id, spec)
    raw = new_api_key(spec.type)
    key = ApiKey(
        id=new_id("key"),
        project_id=project_id,
        type=spec.type,
        name=name,
        access=spec.access if spec.type == "secret" else None,
        index_id=spec.index_id if spec.type == "secret" else None,
        allowed_origins=origins,
        prefix=raw[:PREFIX_LENGTH],
        key_hash=hash_token(raw),
        created_by=created_by,
        expires_at=expires_at,
    )
    db.add(key)
    db.flush()
    return key, raw


def list_keys(db: Session, project_id: str, *, limit: int, cursor: str | None) -> tuple[list[ApiKey], str | None]:
    rows, next_cursor = repository.list_keys(db, project_id, limit=limit, cursor=cursor)
    return [row[0] for row in rows], next_cursor


def revoke_key(db: Session, project_id: str, key_id: str) -> ApiKey:
    """Marks the key revoked. The caller must also call ``control_plane.access.revoke_key`` so every
    API instance stops accepting it at once."""
    key = repository.get_live_key(db, project_id, key_id)
    if key is None:
        raise not_found("API key")
    key.revoked_at = utcnow()
    db.flush()
    return key


def count_live_keys(db: Session, project_id: str) -> int:
    return repository.count_live_keys(db, project_id)


__all__: Sequence[str] = ["NewKey", "count_live_keys", "create_key", "list_keys", "normalize_origin", "revoke_key"]
