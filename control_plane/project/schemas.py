from __future__ import annotations

from control_plane.wire import RequestModel, Timestamp, TrimmedName, WireModel


class ProjectOut(WireModel):
    id: str
    org_id: str
    name: str
    created_at: Timestamp


class ProjectList(WireModel):
    items: list[ProjectOut]
    next_cursor: str | None


class ProjectIn(RequestModel):
    name: TrimmedName
