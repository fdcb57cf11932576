"""Index rows. Queries for a tenant's index filter by its project, so another project's id is not found;
the task runner's (its own section) take the index by id alone."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from control_plane.db import utcnow
from control_plane.index.models import Index
from control_plane.project.models import Project
from control_plane.serving.follower import SyncState


def all_indices(db: Session) -> list[Index]:
    """Every index of every tenant (operator and start-up work, never a request)."""
    return list(db.scalars(select(Index)))


def ids_in_org(db: Session, org_id: str) -> list[str]:
    """The ids of every index in the organization's projects."""
    return list(db.scalars(select(Index.id).join(Project, Project.id == Index.project_id)
                           .where(Project.org_id == org_id)))


def get_index(db: Session, project_id: str, index_id: str, *, lock: bool = False) -> Index | None:
    """The project's index; ``lock`` holds its row until the transaction ends."""
    if lock:
        return db.scalar(
            select(Index).where(Index.id == index_id, Index.project_id == project_id).with_for_update()
        )
    # by primary key: the access dependency loaded it already (identity map, no second query)
    index = db.get(Index, index_id)
    return index if index is not None and index.project_id == project_id else None


def newest_index(db: Session) -> Index | None:
    """The index created last, of any tenant (the status route's search probe)."""
    return db.scalars(select(Index).order_by(Index.created_at.desc()).limit(1)).first()


def detached_index(db: Session, index_id: str) -> Index | None:
    """The index by id, detached from the session (cached by searches across requests)."""
    index = db.get(Index, index_id)
    if index is not None:
        db.expunge(index)
    return index


def list_indices(db: Session, project_id: str, *, only: str | None, after: str | None, limit: int) -> list[Index]:
    """Up to ``limit`` of the project's indices by id after ``after`` (``only``: that one index)."""
    query = select(Index).where(Index.project_id == project_id)
    if only is not None:
        query = query.where(Index.id == only)
    if after is not None:
        query = query.where(Index.id > after)
    return list(db.scalars(query.order_by(Index.id).limit(limit)))


def count_indices(db: Session, project_id: str) -> int:
    return int(db.scalar(select(func.count()).select_from(Index).where(Index.project_id == project_id)) or 0)


def name_taken(db: Session, project_id: str, name: str) -> bool:
    return db.scalar(select(Index.id).where(Index.project_id == project_id, Index.name == name)) is not None


# --------------------------------------------------------------------------- change sequences
def reserve_seqs(db: Session, index_id: str, count: int) -> int:
    """Hand out ``count`` sequence numbers; returns the last one. Locks the index row until commit,
    so transactions commit their sequences in order."""
    db.execute(
        update(Index)
        .where(Index.id == index_id)
        .values(seq=Index.seq + count, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return current_seq(db, index_id)


def current_seq(db: Session, index_id: str) -> int:
    return int(db.scalar(select(Index.seq).where(Index.id == index_id)) or 0)


def sequences(db: Session, index_id: str) -> tuple[int, int] | None:
    """The index's sequence and flush sequence; None when it is gone."""
    row = db.execute(select(Index.seq, Index.flush_seq).where(Index.id == index_id)).one_or_none()
    return None if row is None else (int(row[0]), int(row[1] or 0))


def set_flush_seq(db: Session, index_id: str, seq: int) -> None:
    db.execute(
        update(Index).where(Index.id == index_id).values(flush_seq=seq).execution_options(synchronize_session=False)
    )


# --------------------------------------------------------------------------- task work (no tenant: the runner's)
def index_by_id(db: Session, index_id: str) -> Index | None:
    return db.get(Index, index_id)


def locked_index(db: Session, index_id: str) -> Index | None:
    """The index by id, its row locked until the transaction ends."""
    return db.scalar(select(Index).where(Index.id == index_id).with_for_update())


def touch_index(db: Session, index_id: str) -> None:
    """Bump ``updated_at``; the UPDATE takes the row's lock (on SQLite the database's write lock,
    which ``FOR UPDATE`` does not take)."""
    db.execute(update(Index).where(Index.id == index_id).values(updated_at=utcnow()))


def indices_with_feed(db: Session) -> list[Index]:
    """Every index with a data source configured."""
    return list(db.scalars(select(Index).where(Index.feed.is_not(None))))


def set_document_count(db: Session, index_id: str, count: int) -> None:
    db.execute(update(Index).where(Index.id == index_id).values(document_count=count))


def start_build(db: Session, index_id: str, generation: int, *, upto: int, mapping: dict[str, Any],
                session_id: str | None) -> None:
    """``generation`` is being built, up to ``upto``, with ``mapping``, from the documents table or a
    replace session's staged rows: the index is ``reindexing`` until it is swapped in or dropped."""
    build = {"upto": upto, "mapping": mapping, "sessionId": session_id}
    db.execute(update(Index).where(Index.id == index_id).values(
        building_generation=generation, build=build, status="reindexing"))


def sync_states(db: Session) -> list[SyncState]:
    """Every index's serving generation and sequence, and the generation being built (one query)."""
    rows = db.execute(select(Index.id, Index.shards, Index.serving_generation, Index.seq, Index.flush_seq,
                             Index.building_generation, Index.build))
    return [SyncState(*row) for row in rows]


def touch_merch(db: Session, index_id: str) -> None:
    """Move the index's merchandising version (in the writer's transaction): serving processes
    recompile its synonyms and rules when they next resolve it."""
    db.execute(update(Index).where(Index.id == index_id).values(merch_version=Index.merch_version + 1))


def exists_under(db: Session, project_id: str, _index_id: str | None, index_id: str) -> bool:
    """The index is the project's. By primary key: the route's own lookup then hits the identity map."""
    index = db.get(Index, index_id)
    return index is not None and index.project_id == project_id


def projects_of(db: Session, index_ids: list[str]) -> dict[str, str]:
    """The project of each of these indices that exists (any project: callers check the owner)."""
    if not index_ids:
        return {}
    rows = db.execute(select(Index.id, Index.project_id).where(Index.id.in_(sorted(set(index_ids)))))
    return dict(rows.tuples().all())
