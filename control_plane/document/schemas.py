"""Request and answer bodies of the document and replace-session routes (camelCase on the wire)."""

from __future__ import annotations

from typing import Any

from control_plane.db import utcnow
from control_plane.document.models import ReplaceSession
from control_plane.index.schemas import Mapping
from control_plane.wire import RequestModel, Timestamp, WireModel


class FlushOut(WireModel):
    task_id: str
    previous_doc_count: int


class DocumentList(WireModel):
    """A page of stored documents, each as it was uploaded."""

    items: list[dict[str, Any]]
    next_cursor: str | None


class SessionCreate(RequestModel):
    mapping: Mapping | None = None


class SessionOut(WireModel):
    id: str
    index_id: str
    status: str
    document_count: int
    mapping: dict[str, Any] | None = None
    created_at: Timestamp
    expires_at: Timestamp
    task_id: str | None

    @classmethod
    def of(cls, session: ReplaceSession) -> SessionOut:
        """The session as its owner sees it: an open session past its expiry is ``expired``
        (the row says so only once something touches it)."""
        out = cls.model_validate(session)
        if out.status == "open" and session.expires_at <= utcnow():
            out.status = "expired"
        return out


class SessionUploadOut(WireModel):
    """Under a dynamic mapping, what the upload added to the session's mapping and the values that
    do not fit their field (as an upload task's details); absent otherwise."""

    received: int
    document_count: int
    fields_added: list[dict[str, Any]] | None = None
    conflicts: list[dict[str, Any]] | None = None
    conflict_count: int | None = None
    unmapped: list[dict[str, Any]] | None = None
