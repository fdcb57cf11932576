"""Request and answer bodies of the index routes (camelCase on the wire)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from control_plane.wire import RequestModel, Timestamp, WireModel

Language = Literal["en", "de", "fr", "es", "it", "nl", "pt", "ru", "sv"]


class IndexCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    shards: int = Field(default=1, ge=1, le=64)
    replicas: int = Field(default=1, ge=1, le=8)
    language: Language = "en"
    mapping: dict[str, Any] | None = None


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
    created_at: Timestamp
    updated_at: Timestamp

    @field_validator("integration", mode="before")
    @classmethod
    def _no_integration(cls, value: Any) -> Any:
        return value or None  # an empty record is no integration


class IndexList(WireModel):
    items: list[IndexOut]
    next_cursor: str | None


class RangeIn(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    from_: float | str | None = Field(default=None, alias="from")
    to: float | str | None = None
    label: str


class FacetIn(RequestModel):
    field: str = Field(min_length=1)
    type: Literal["terms", "range"] = "terms"
    label: str | None = None
    # terms facets only (default 10 and "count"); a range facet answers its ranges in their order
    size: int | None = Field(default=None, ge=1, le=1000)
    sort: Literal["count", "alpha"] | None = None
    ranges: list[RangeIn] | None = None  # range facets only


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
