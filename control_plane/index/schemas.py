"""Request and answer bodies of the index routes (camelCase on the wire)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema, field_validator

from control_plane.wire import RequestModel, Timestamp, WireModel
from shared.mapping import mapping_json_schema

Language = Literal["en", "de", "fr", "es", "it", "nl", "pt", "ru", "sv"]
# A mapping is checked by the engine's rules (shared.mapping), which its JSON Schema states.
Mapping = Annotated[dict[str, Any], WithJsonSchema(mapping_json_schema())]


class IndexCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    shards: int = Field(default=1, ge=1, le=64)
    replicas: int = Field(default=1, ge=1, le=8)
    language: Language = "en"
    mapping: Mapping | None = None


class IntegrationSettings(WireModel):
    manage_mapping: bool = False


class IntegrationOut(WireModel):
    platform: str
    name: str
    url: str | None = None
    version: str | None = None
    settings: IntegrationSettings
    key_id: str | None = None
    connected_at: str | None = None
    updated_at: str | None = None


class IndexOut(WireModel):
    id: str
    name: str
    project_id: str
    shards: int
    replicas: int
    language: str
    document_count: int
    status: Literal["ready", "reindexing"]
    integration: IntegrationOut | None
    feed: FeedOut | None = Field(description="The data source as GET .../feed answers it, or null when there is none")
    created_at: Timestamp
    updated_at: Timestamp

    @field_validator("integration", mode="before")
    @classmethod
    def _no_integration(cls, value: Any) -> Any:
        return value or None  # an empty record is no integration

    @field_validator("feed", mode="before")
    @classmethod
    def _feed(cls, value: Any) -> Any:
        return FeedOut.of(value) if isinstance(value, dict) and value else None


class IndexList(WireModel):
    items: list[IndexOut]
    next_cursor: str | None


class RangeIn(RequestModel):
    from_: float | str | None = Field(default=None, alias="from")
    to: float | str | None = None
    label: str


class FacetIn(RequestModel):
    field: str = Field(min_length=1)
    type: Literal["terms", "range", "hierarchy"] = "terms"
    label: str | None = None
    # terms and hierarchy facets (default 10 and "count"; a hierarchy's per level); a range facet
    # answers its ranges in their order
    size: int | None = Field(default=None, ge=1, le=1000)
    sort: Literal["count", "alpha"] | None = None
    ranges: list[RangeIn] | None = None  # range facets only
    separator: str | None = Field(default=None, min_length=1, max_length=10,
                                  description='hierarchy facets only: what joins the levels of a path (" > ")')


class FacetsIn(RequestModel):
    facets: list[FacetIn]


class FacetsOut(WireModel):
    facets: list[dict[str, Any]]


class IntegrationSettingsIn(RequestModel):
    manage_mapping: bool = False


class IntegrationIn(RequestModel):
    platform: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=200)
    url: str | None = Field(default=None, max_length=2000)
    version: str | None = Field(default=None, max_length=100)
    settings: IntegrationSettingsIn = Field(default_factory=IntegrationSettingsIn)


class FeedIn(RequestModel):
    url: str = Field(min_length=1, max_length=2000)
    format: Literal["json", "jsonl", "csv"]
    schedule: Literal["manual", "hourly", "daily"] = "manual"
    field_map: dict[str, str] | None = None


class FeedOut(WireModel):
    url: str
    format: str
    schedule: str
    field_map: dict[str, str]
    last_sync_at: str | None = None
    last_task_id: str | None = None

    @classmethod
    def of(cls, feed: dict[str, Any]) -> FeedOut:
        """The tenant's view of a stored data source (never its sealed URL)."""
        return cls(
            url=feed["url"],
            format=feed["format"],
            schedule=feed.get("schedule", "manual"),
            field_map=feed.get("fieldMap") or {},
            last_sync_at=feed.get("lastSyncAt"),
            last_task_id=feed.get("lastTaskId"),
        )


class TaskAccepted(WireModel):
    task_id: str


class ReindexCancelOut(WireModel):
    task_id: str
    status: str


class UsageEntry(WireModel):
    kind: str
    id: str
    name: str | None = None
    path: str


class UsageOut(WireModel):
    fields: dict[str, list[UsageEntry]]
