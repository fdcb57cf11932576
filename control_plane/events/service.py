"""Click and conversion events: each is tied to its search by the signed ``queryId``
(``control_plane.analytics.query_ids``) and added to that search's aggregate row (its index, day
and normalized query) and to the clicked document's row.

A batch is all or nothing. An event whose ``queryId`` is malformed, forged, older than the
retention, of an index that no longer exists, of another project, or (index-scoped key) of another
index, makes the whole batch answer 404 ``NOT_FOUND``, with a ``details`` entry for each such event
(``events[3].queryId``) — the same answer as any id of another project. So does an event naming a
document its search did not return (``events[3].documentId``): the query id carries a tag of each
hit returned.

What is counted: each (search, document, type) once, whichever process gets it and however often
it is sent (a key per such event in ``analytics_event_keys``, claimed in the transaction that adds
the counts); and at most ``analytics_events_per_day`` events per index and UTC day. A repeated
event and one past the cap are accepted and not counted: ``accepted`` is the number counted.
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from typing import Any

from sqlalchemy.orm import Session

from control_plane.access.caller import Principal
from control_plane.analytics import repository, store
from control_plane.analytics.query_ids import QueryRef
from control_plane.events.schemas import MAX_EVENTS, EventIn
from control_plane.index.service import plan_limits_for_project, projects_of
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
    """Each event's search, or 404 for the batch naming every event that has none of this key's,
    or whose document that search did not return."""
    assert principal.key is not None
    signer = runtime.query_ids
    oldest = store.today() - timedelta(days=runtime.settings.analytics_retention_days - 1)
    distinct = {event.query_id for event in events}  # a page's events share their search's id
    known = {query_id: signer.parse(query_id) for query_id in distinct}
    parsed = [known[event.query_id] for event in events]
    owners = projects_of(db, sorted({ref.index_id for ref in parsed if ref is not None}))
    scope = principal.key.index_id
    details = []
    for i, (ref, event) in enumerate(zip(parsed, events, strict=True)):
        if (ref is None or owners.get(ref.index_id) != principal.key.project_id
                or scope not in (None, ref.index_id) or ref.day < oldest):
            details.append({"path": f"events[{i}].queryId", "message": "no search of this project has this queryId"})
        elif not signer.returned(ref, event.document_id):
            details.append({"path": f"events[{i}].documentId", "message": "not a hit of the search this queryId names"})
    if details:
        raise ServiceError(ErrorCode.NOT_FOUND, "Query or hit not found", details[:100])
    return [ref for ref in parsed if ref is not None]


def _key(ref: QueryRef, event: EventIn) -> str:
    """The event's identity: its search (the signed bytes), type and document."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (ref.index_id.encode(), ref.signed, event.type.encode(), event.document_id.encode()):
        digest.update(len(part).to_bytes(4, "big") + part)
    return digest.hexdigest()


def _counted(db: Session, limit: int, index_id: str, wanted: dict[str, date], received: date) -> set[str]:
    """The keys of one index this batch counts: new ones, within the day's room (those already
    counted are looked up first only when the room is short: they must not take any of it)."""
    room = max(0, limit - repository.events_received(db, index_id, received))
    if room >= len(wanted):
        return repository.claim_keys(db, index_id, wanted, received)
    known = repository.counted_keys(db, index_id, list(wanted))
    fresh = [key for key in wanted if key not in known]
    return repository.claim_keys(db, index_id, {key: wanted[key] for key in fresh[:room]}, received)


def record(runtime: Runtime, db: Session, principal: Principal, events: list[EventIn]) -> int:
    """Add the batch's counts in the caller's transaction; the number of events counted."""
    refs = _refs(runtime, db, principal, events)
    keys = [_key(ref, event) for ref, event in zip(refs, events, strict=True)]
    by_index: dict[str, dict[str, date]] = {}
    for ref, key in zip(refs, keys, strict=True):
        by_index.setdefault(ref.index_id, {})[key] = ref.day
    received = store.today()
    counted: set[str] = set()
    for index_id in sorted(by_index):
        counted |= _counted(db, runtime.settings.analytics_events_per_day, index_id, by_index[index_id], received)
    aggregate = store.Aggregate()
    added = 0
    for ref, event, key in zip(refs, events, keys, strict=True):
        if key in counted:
            counted.discard(key)  # a key repeated in the batch counts once
            aggregate.add_event(ref, event.type, event.document_id, event.position)
            added += 1
    repository.write(db, aggregate)
    return added
