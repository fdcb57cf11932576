from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from control_plane.wire import RequestModel, Timestamp, WireModel

ProjectName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class ProjectOut(WireModel):
    id: str
    org_id: str
    name: str
    created_at: Timestamp


class ProjectList(WireModel):
    items: list[ProjectOut]
    next_cursor: str | None


class ProjectIn(RequestModel):
    name: ProjectName
