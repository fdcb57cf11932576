"""Queries over API keys; every one filters by the caller's project."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from control_plane.access.registry import KeyInfo
from control_plane.api_key.models import ApiKey
from control_plane.db import utcnow
from control_plane.wire import AnyRow, keyset_page


def list_keys(db: Session, project_id: str, *, limit: int, cursor: str | None) -> tuple[Sequence[AnyRow], str | None]:
    stmt = select(ApiKey).where(ApiKey.project_id == project_id, ApiKey.revoked_at.is_(None))
    return keyset_page(
        db, stmt, ApiKey.created_at, ApiKey.id, limit=limit, cursor=cursor,
        key=lambda row: (row[0].created_at, row[0].id),
    )


def get_live_key(db: Session, project_id: str, key_id: str) -> ApiKey | None:
    return db.scalar(
        select(ApiKey).where(ApiKey.id == key_id, ApiKey.project_id == project_id, ApiKey.revoked_at.is_(None))
    )


def live_keys_named(db: Session, project_id: str, prefix: str) -> Sequence[ApiKey]:
    """The project's live keys whose name starts with ``prefix``."""
    return db.scalars(select(ApiKey).where(ApiKey.project_id == project_id, ApiKey.revoked_at.is_(None),
                                           ApiKey.name.startswith(prefix))).all()


def count_live_keys(db: Session, project_id: str) -> int:
    stmt = select(func.count()).select_from(ApiKey).where(ApiKey.project_id == project_id, ApiKey.revoked_at.is_(None))
    return int(db.scalar(stmt) or 0)


def index_in_project(db: Session, project_id: str, index_id: str) -> bool | None:
    """Whether the index exists in the project; None while the index domain isn't installed."""
    try:
        module = importlib.import_module("control_plane.index.models")
    except ImportError:
        return None
    index_model = getattr(module, "Index", None)
    if index_model is None:
        return None
    stmt = select(index_model.id).where(index_model.id == index_id, index_model.project_id == project_id)
    if hasattr(index_model, "deleted_at"):
        stmt = stmt.where(index_model.deleted_at.is_(None))
    return db.scalar(stmt) is not None


# --------------------------------------------------------------------------- the access layer's questions
def key_info_by_hash(db: Session, key_hash: str) -> KeyInfo | None:
    """The live (unrevoked) key with this hash, as the access layer caches it."""
    row = db.scalar(select(ApiKey).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None)))
    if row is None:
        return None
    return KeyInfo(
        id=row.id,
        project_id=row.project_id,
        type="secret" if row.type == "secret" else "public",
        access=row.access,
        index_id=row.index_id,
        allowed_origins=tuple(row.allowed_origins or ()),
        expires_at=row.expires_at,
    )


def touch_last_used(db: Session, key_id: str) -> None:
    row = db.get(ApiKey, key_id)
    if row is not None:
        row.last_used_at = utcnow()


def live_key_exists(db: Session, project_id: str, _index_id: str | None, key_id: str) -> bool:
    row = db.get(ApiKey, key_id)
    return row is not None and row.project_id == project_id and row.revoked_at is None
