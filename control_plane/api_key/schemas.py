from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from control_plane.wire import RequestModel, Timestamp, WireModel

KeyName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class ApiKeyIn(RequestModel):
    type: Literal["secret", "public"]
    name: KeyName
    access: Literal["read", "full"] | None = Field(
        default=None, description="Secret keys only, required for them"
    )
    index_id: str | None = Field(default=None, description="Secret keys only: limit the key to one index")
    allowed_origins: list[str] | None = Field(
        default=None,
        max_length=100,
        description="Public keys only, required for them: `scheme://host[:port]` or `https://*.example.com`",
    )
    expires_at: datetime | None = None


class ApiKeyOut(WireModel):
    id: str
    type: Literal["secret", "public"]
    name: str
    access: Literal["read", "full"] | None
    index_id: str | None
    allowed_origins: list[str]
    prefix: str
    created_at: Timestamp
    last_used_at: Timestamp | None
    expires_at: Timestamp | None


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(description="The full key. It is shown only in this answer.")


class ApiKeyList(WireModel):
    items: list[ApiKeyOut]
    next_cursor: str | None
