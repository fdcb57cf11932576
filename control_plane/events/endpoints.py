"""Click and conversion events (CONTRACT §6). — routes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from control_plane.access.caller import Principal
from control_plane.deps import RuntimeDep, SessionDep, client_ip
from control_plane.events import service
from control_plane.events.schemas import EventsAccepted, EventsIn
from control_plane.storefront.endpoints import storefront_caller
from control_plane.wire import api_router, error_responses

router = api_router(tags=["events"])


@router.post(
    "/events",
    summary="Record clicks and conversions on search results (public key from an allowed origin, or a secret key)",
    response_model=EventsAccepted,
    responses={**error_responses(404), 413: {"description": "PAYLOAD_TOO_LARGE: more than 1000 events"},
               429: {"description": "RATE_LIMITED: past the plan's rate (counted per request, as searches)"}},
)
def post_events(
    body: EventsIn,
    request: Request,
    runtime: RuntimeDep,
    db: SessionDep,
    principal: Annotated[Principal, Depends(storefront_caller)],
) -> Any:
    """Each event's `queryId` is the answer's of the search it follows, and its `documentId` one of
    that answer's hits. The batch is all or nothing: a `queryId` that is not one of this project's
    searches (malformed, forged, of another project or index, or past the analytics retention), or a
    `documentId` that search did not return, answers 404 `NOT_FOUND` with a detail per such event.
    Each (queryId, documentId, type) counts once; an index counts at most a daily number of events
    (`analytics_events_per_day`, 50,000 by default), past which events are accepted and not counted."""
    service.check_size(body.events)
    service.charge_events(runtime, db, principal, client_ip(request))
    return {"accepted": service.record(runtime, db, principal, body.events)}
