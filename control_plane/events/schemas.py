"""Wire shapes of ``POST /v1/events`` (CONTRACT §6)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from control_plane.analytics.query_ids import MAX_CHARS
from control_plane.wire import RequestModel, WireModel

MAX_EVENTS = 1000


class EventIn(RequestModel):
    type: Literal["click", "conversion"]
    query_id: str = Field(min_length=1, max_length=MAX_CHARS, description="The `queryId` of the search answer")
    document_id: str = Field(min_length=1, max_length=512)
    position: int | None = Field(default=None, ge=1, le=100_000, description="1-based position of the hit clicked")
    user_token: str | None = Field(default=None, max_length=200, description="Accepted; not stored")


class EventsIn(RequestModel):
    events: list[EventIn] = Field(min_length=1, description=f"At most {MAX_EVENTS}; more answer 413",
                                  json_schema_extra={"maxItems": MAX_EVENTS})


class EventsAccepted(WireModel):
    accepted: int = Field(description="Events counted: an event already counted (the same queryId, documentId and "
                                      "type) or past the index's daily cap is accepted and not counted")
