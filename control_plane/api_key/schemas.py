from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from control_plane.wire import JsonDateTime, RequestModel, Timestamp, TrimmedName, WireModel

_NONE: JsonDict = {"type": "null"}


class ApiKeyIn(RequestModel):
    """A secret key takes `access` (and may take `indexId`); a public key takes `allowedOrigins`."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"properties": {"type": {"const": "secret"}, "access": {"enum": ["read", "full"]},
                        "allowedOrigins": {"anyOf": [_NONE, {"type": "array", "maxItems": 0}]}},
         "required": ["access"]},
        {"properties": {"type": {"const": "public"}, "access": _NONE, "indexId": _NONE,
                        "allowedOrigins": {"type": "array", "minItems": 1}},
         "required": ["allowedOrigins"]},
    ]})

    type: Literal["secret", "public"]
    name: TrimmedName
    access: Literal["read", "full"] | None = Field(
        default=None, description="Secret keys only, required for them"
    )
    index_id: str | None = Field(default=None, description="Secret keys only: limit the key to one index")
    allowed_origins: list[str] | None = Field(
        default=None,
        max_length=100,
        description="Public keys only, required for them: `scheme://host[:port]` or `https://*.example.com`",
    )
    expires_at: JsonDateTime | None = None


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
