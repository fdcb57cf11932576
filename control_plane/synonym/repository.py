from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from control_plane.synonym.models import Synonym


def list_for_index(db: Session, project_id: str, index_id: str, after: str | None, limit: int | None) -> list[Synonym]:
    query = select(Synonym).where(Synonym.project_id == project_id, Synonym.index_id == index_id)
    if after:
        query = query.where(Synonym.id > after)
    query = query.order_by(Synonym.id)
    return list(db.scalars(query if limit is None else query.limit(limit)))


def enabled_for_index(db: Session, index_id: str) -> list[Synonym]:
    return list(db.scalars(select(Synonym).where(Synonym.index_id == index_id, Synonym.enabled.is_(True))))


def get(db: Session, project_id: str, index_id: str, synonym_id: str) -> Synonym | None:
    return db.scalar(
        select(Synonym).where(Synonym.id == synonym_id, Synonym.project_id == project_id, Synonym.index_id == index_id)
    )


def count(db: Session, index_id: str) -> int:
    return int(db.scalar(select(func.count()).select_from(Synonym).where(Synonym.index_id == index_id)) or 0)


def delete_all(db: Session, index_id: str) -> None:
    db.execute(delete(Synonym).where(Synonym.index_id == index_id))


def exists_under(db: Session, project_id: str, index_id: str | None, synonym_id: str) -> bool:
    row = db.get(Synonym, synonym_id)
    return row is not None and row.project_id == project_id and row.index_id == index_id
