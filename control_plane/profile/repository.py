from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from control_plane.profile.models import Profile


def list_for_index(db: Session, project_id: str, index_id: str, after: str | None, limit: int) -> list[Profile]:
    query = select(Profile).where(Profile.project_id == project_id, Profile.index_id == index_id)
    if after:
        query = query.where(Profile.id > after)
    return list(db.scalars(query.order_by(Profile.id).limit(limit)))


def all_for_index(db: Session, index_id: str) -> Sequence[Profile]:
    """Every profile of the index (the usage registry)."""
    return db.scalars(select(Profile).where(Profile.index_id == index_id)).all()


def get(db: Session, project_id: str, index_id: str, profile_id: str) -> Profile | None:
    return db.scalar(
        select(Profile).where(
            Profile.id == profile_id, Profile.project_id == project_id, Profile.index_id == index_id
        )
    )


def by_name(db: Session, index_id: str, name: str) -> Profile | None:
    return db.scalar(select(Profile).where(Profile.index_id == index_id, Profile.name == name))


def by_key(db: Session, profile_key: str, *, index_id: str | None = None) -> Profile | None:
    """The profile behind a handle (``index_id``: only if it is that index's)."""
    query = select(Profile).where(Profile.profile_key == profile_key)
    if index_id is not None:
        query = query.where(Profile.index_id == index_id)
    return db.scalar(query)


def index_id_of_key(db: Session, profile_key: str) -> str | None:
    return db.scalar(select(Profile.index_id).where(Profile.profile_key == profile_key))


def project_of_key(db: Session, profile_key: str) -> str | None:
    """The project behind a storefront profile handle."""
    return db.scalar(select(Profile.project_id).where(Profile.profile_key == profile_key))


def exists_under(db: Session, project_id: str, index_id: str | None, profile_id: str) -> bool:
    row = db.get(Profile, profile_id)
    return row is not None and row.project_id == project_id and row.index_id == index_id
