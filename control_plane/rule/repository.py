from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from control_plane.rule.models import Rule


def list_for_index(db: Session, project_id: str, index_id: str, after: int, limit: int | None) -> list[Rule]:
    """Rules in position order, those after position ``after``."""
    query = (select(Rule).where(Rule.project_id == project_id, Rule.index_id == index_id, Rule.position > after)
             .order_by(Rule.position, Rule.id))
    return list(db.scalars(query if limit is None else query.limit(limit)))


def all_for_index(db: Session, index_id: str) -> list[Rule]:
    return list(db.scalars(select(Rule).where(Rule.index_id == index_id).order_by(Rule.position, Rule.id)))


def get(db: Session, project_id: str, index_id: str, rule_id: str) -> Rule | None:
    return db.scalar(select(Rule).where(Rule.id == rule_id, Rule.project_id == project_id, Rule.index_id == index_id))


def count(db: Session, index_id: str) -> int:
    return int(db.scalar(select(func.count()).select_from(Rule).where(Rule.index_id == index_id)) or 0)


def shift(db: Session, index_id: str, start: int, stop: int | None, by: int) -> None:
    """Move positions in ``[start, stop]`` (``stop`` None: to the end) by ``by``."""
    condition = [Rule.index_id == index_id, Rule.position >= start]
    if stop is not None:
        condition.append(Rule.position <= stop)
    db.execute(update(Rule).where(*condition).values(position=Rule.position + by))


def exists_under(db: Session, project_id: str, index_id: str | None, rule_id: str) -> bool:
    row = db.get(Rule, rule_id)
    return row is not None and row.project_id == project_id and row.index_id == index_id
