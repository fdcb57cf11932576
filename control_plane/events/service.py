"""Click and conversion events: each is tied to its search by the signed ``queryId``
(``control_plane.analytics.query_ids``) and added to that search's aggregate row (its index, day
and normalized query) and to the clicked document's row.

A batch is all or nothing. An event whose ``queryId`` is malformed, forged, older than the
retention, of an index that no longer exists, of another project, or (index-scoped key) of another
index, makes the whole batch answer 404 ``NOT_FOUND``, with a ``details`` entry for each such event
(``events[3].queryId``) — the same answer as any id of another project.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from control_plane.access import Principal
from control_plane.analytics import store
from control_plane.analytics.query_ids import QueryRef, query_ids
from control_plane.events.schemas import MAX_EVENTS, EventIn
from control_plane.index.models import Index
from control_plane.index.service import plan_limits_for_project
from control_plane.runtime import Runtime
from control_plane.search.quota import WINDOW_SECONDS
from shared.errors import ErrorCode, ServiceError


def check_size(events: list[Any]) -> None:
    if len(events) > MAX_EVENTS:
        raise ServiceError(ErrorCode.PAYLOAD_TOO_LARGE, f"At most {MAX_EVENTS} events per request ({len(events)} sent)")


def charge_events(runtime: Runtime, db: Session, principal: Principal, client: str) -> None:
    """One request counts like one search (``control_plane.search.quota``), in buckets of its own
    so events never use up searches: per project for secret keys; per client address and per
    project for public keys."""
    assert principal.key is not None
    project_id = principal.key.project_id
    per_window = plan_limits_for_project(db, project_id).max_searches_per_second * WINDOW_SECONDS
    limit = f"{per_window}/{WINDOW_SECONDS} seconds"
    if principal.kind != "public_key":
        runtime.quotas.hit(limit, "events", project_id)
        return
    per_client = max(WINDOW_SECONDS, per_window // 2)
    runtime.quotas.hit(f"{per_client}/{WINDOW_SECONDS} seconds", "events-shopper", project_id, client)
    runtime.quotas.hit(limit, "events-storefront", project_id)


def _refs(runtime: Runtime, db: Session, principal: Principal, events: list[EventIn]) -> list[QueryRef]:
    """Each event's search, or 404 for the batch naming every event that has none of this key's."""
    assert principal.key is not None
    signer = query_ids(runtime)
    oldest = store.today() - timedelta(days=runtime.settings.analytics_retention_days - 1)
    parsed = [signer.parse(event.query_id) for event in events]
    wanted = {ref.index_id for ref in parsed if ref is not None}
    owners = dict(db.execute(select(Index.id, Index.project_id).where(Index.id.in_(sorted(wanted)))).tuples().all()) \
        if wanted else {}
    scope = principal.key.index_id
    details = []
    for i, ref in enumerate(parsed):
        if (ref is None or owners.get(ref.index_id) != principal.key.project_id
                or scope not in (None, ref.index_id) or ref.day < oldest):
            details.append({"path": f"events[{i}].queryId", "message": "no search of this project has this queryId"})
    if details:
        raise ServiceError(ErrorCode.NOT_FOUND, "Query not found", details[:100])
    return [ref for ref in parsed if ref is not None]


def record(runtime: Runtime, db: Session, principal: Principal, events: list[EventIn]) -> int:
    """Add the batch's counts in the caller's transaction; the number of events accepted."""
    refs = _refs(runtime, db, principal, events)
    aggregate = store.Aggregate()
    for ref, event in zip(refs, events, strict=True):
        aggregate.add_event(ref, event.type, event.document_id, event.position)
    store.write(db, aggregate)
    return len(events)
