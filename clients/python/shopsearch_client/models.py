"""Typed answers of the API, field for field as the server's OpenAPI document (``/openapi.json``)
describes them (``tests/clients/test_python_client_models.py`` fails when the two disagree).

Attributes are snake_case (``index.document_count``); the JSON names are camelCase (``documentCount``)
and every model accepts and dumps either (``model_dump(by_alias=True)`` gives what the API sends).
Fields a newer server adds are kept (``model.model_extra``) rather than refused. Timestamps the
document declares as ``date-time`` are :class:`~datetime.datetime`; the others stay strings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

T = TypeVar("T")


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Page(Model, Generic[T]):
    """One page of a list: ``items`` and the cursor of the next page (None on the last)."""

    items: list[T]
    next_cursor: str | None


# --------------------------------------------------------------------------- status
class ServiceState(Model):
    name: Literal["search", "indexing", "dashboard", "mcp"]
    state: Literal["operational", "degraded", "down"]


class Status(Model):
    """``GET /v1/status``: the worst state of the services, each service's, and when it was checked."""

    status: Literal["operational", "degraded", "down"]
    services: list[ServiceState]
    checked_at: str


# --------------------------------------------------------------------------- projects, indices
class ProjectInfo(Model):
    id: str
    org_id: str
    name: str
    created_at: datetime


class IntegrationSettings(Model):
    manage_mapping: bool = False


class Integration(Model):
    """A shop platform plugin connected to an index (``PUT …/integration``)."""

    platform: str
    name: str
    url: str | None = None
    version: str | None = None
    settings: IntegrationSettings
    key_id: str | None = None
    connected_at: str | None = None
    updated_at: str | None = None


class IndexInfo(Model):
    id: str
    name: str
    project_id: str
    shards: int
    replicas: int
    language: str
    document_count: int
    status: Literal["ready", "reindexing"]
    integration: Integration | None
    feed: Feed | None
    created_at: datetime
    updated_at: datetime


class UsageEntry(Model):
    """Where a mapped field is used: ``kind`` (profile, rule, facet, suggestions, dataSource), ``path`` inside it."""

    kind: str
    id: str
    name: str | None = None
    path: str


class MappingUsage(Model):
    fields: dict[str, list[UsageEntry]]


class Facets(Model):
    facets: list[dict[str, Any]]


class Feed(Model):
    url: str
    format: str
    schedule: str
    field_map: dict[str, str]
    last_sync_at: str | None = None
    last_task_id: str | None = None


# --------------------------------------------------------------------------- tasks, documents
class TaskAccepted(Model):
    """A 202 answer: the work runs as the task ``task_id``; wait for it with ``wait_for_task``."""

    task_id: str


class FlushAnswer(Model):
    task_id: str
    previous_doc_count: int


class ReindexCancelAnswer(Model):
    task_id: str
    status: str


class TaskError(Model):
    code: str
    message: str


class Task(Model):
    """A task: ``status`` enqueued → processing → succeeded | failed | canceled."""

    task_id: str
    project_id: str
    index_id: str
    type: str
    status: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    details: dict[str, Any]
    error: TaskError | None

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "canceled")


class ReplaceSessionInfo(Model):
    id: str
    index_id: str
    status: str
    document_count: int
    mapping: dict[str, Any] | None = None
    created_at: datetime
    expires_at: datetime
    task_id: str | None


class SessionUpload(Model):
    """What a replace-session upload answered: documents received, distinct documents staged so far;
    under a dynamic mapping, the fields it added and the values that do not fit their field."""

    received: int
    document_count: int
    fields_added: list[dict[str, Any]] | None = None
    conflicts: list[dict[str, Any]] | None = None
    conflict_count: int | None = None
    unmapped: list[dict[str, Any]] | None = None


# --------------------------------------------------------------------------- profiles, search
class QueryField(Model):
    weight: int = 1
    typo: bool = True
    prefix: bool = True


class TypoTolerance(Model):
    enabled: bool = True
    min_word_size_one_typo: int = 4
    min_word_size_two_typos: int = 8


class SortOption(Model):
    key: str
    label: str = ""
    sort: list[str]


class Boost(Model):
    field: str
    modifier: Literal["none", "log1p", "sqrt"] = "log1p"
    weight: float = 1.0


class Semantic(Model):
    """Hybrid search over a vector field: ``ratio`` 0 is the keyword ranking, 1 the vector ranking alone."""

    field: str
    ratio: float = 0.5


class Profile(Model):
    """A saved search profile; ``profile_key`` is its storefront handle."""

    id: str
    profile_key: str
    name: str
    index_id: str
    query_fields: dict[str, QueryField] = Field(default_factory=dict)
    operator: Literal["and", "or"] = "and"
    typo_tolerance: TypoTolerance = Field(default_factory=TypoTolerance)
    filters: dict[str, Any] | None = None
    facets: list[str] | None = None
    filter_fields: list[str] | None = None
    sort_options: list[SortOption] = Field(default_factory=list)
    default_sort: str | None = None
    per_page: int = 20
    retrieve: list[str] | None = None
    highlight: list[str] | None = None
    boosts: list[Boost] = Field(default_factory=list)
    synonyms: bool = True
    rules: bool = True
    analytics: bool = True
    distinct: str | None = None
    semantic: Semantic | None = None
    created_at: str
    updated_at: str


class Hit(Model):
    id: str
    score: float | None
    document: dict[str, Any] | None
    highlights: dict[str, Any]
    group_size: int | None = None
    distance_m: int | None = None
    """Meters from the search's ``near`` (a sort option ``FIELD:near``); None: no point, or no such sort."""


class TermCount(Model):
    value: Any
    count: int


class RangeCount(Model):
    from_: float | None = Field(default=None, alias="from")
    to: float | None = None
    label: str | None
    count: int


class FacetNode(Model):
    """A node of a category tree (a ``hierarchy`` facet): its path, level and the children shown."""

    value: str
    path: str
    level: int
    count: int
    children: list[FacetNode]


class SearchAnswer(Model):
    hits: list[Hit]
    total: int
    page: int
    per_page: int
    facets: dict[str, list[FacetNode | TermCount | RangeCount]]
    sort: str | None
    applied_rules: list[str]
    query_id: str
    took_ms: float


class FacetValue(Model):
    value: str
    highlighted: str
    count: int


class FacetValuesAnswer(Model):
    """A facet value search: the values matching what was typed, with the counts of the search."""

    values: list[FacetValue]
    took_ms: float


class MultiSearchAnswer(Model):
    """One answer per query, in order: a search's, or a facet value search's."""

    results: list[SearchAnswer | FacetValuesAnswer]


# --------------------------------------------------------------------------- merchandising
class Synonym(Model):
    """``multiway``: ``terms`` find each other; ``oneway``: ``input`` also finds ``synonyms``."""

    id: str
    type: Literal["multiway", "oneway"]
    terms: list[str] | None = None
    input: str | None = None
    synonyms: list[str] | None = None
    enabled: bool
    created_at: str
    updated_at: str


class SynonymImport(Model):
    imported: int
    total: int
    mode: Literal["append", "replace"]


class SolrSynonyms(Model):
    solr: str


class Rule(Model):
    id: str
    name: str
    enabled: bool
    position: int
    conditions: list[dict[str, Any]]
    filters: dict[str, Any] | None = None
    validity: list[dict[str, Any]]
    consequence: dict[str, Any]
    created_at: str
    updated_at: str


class MatchedRule(Model):
    id: str
    name: str
    enabled: bool
    active: bool


class RuleTestAnswer(Model):
    matched_rules: list[MatchedRule]
    applied_rules: list[str]
    hits: list[dict[str, Any]]
    total: int
    redirect: str | None = None
    user_data: list[dict[str, Any]] | None = None


# --------------------------------------------------------------------------- autocomplete
class SuggestionSource(Model):
    field: str
    weight: float = 1.0


class PopularQueries(Model):
    enabled: bool = True
    min_searches: int = 5
    days: int = 30


class SuggestedProducts(Model):
    enabled: bool = False
    count: int = 4
    profile_key: str | None = None


class SuggestionConfig(Model):
    enabled: bool
    suggest_key: str
    sources: list[SuggestionSource]
    popular_queries: PopularQueries
    max_suggestions: int
    products: SuggestedProducts
    typo_tolerance: bool
    built_at: str | None = None
    built_count: int = 0


class CustomSuggestion(Model):
    id: str
    text: str
    weight: int
    created_at: str


class Suggestion(Model):
    text: str
    highlighted: str
    source: str


class SuggestAnswer(Model):
    suggestions: list[Suggestion]
    products: list[dict[str, Any]] | None = None
    took_ms: float


# --------------------------------------------------------------------------- analytics, events
class Totals(Model):
    searches: int
    suggests: int
    no_result_searches: int
    no_result_rate: float
    clicks: int
    conversions: int
    click_through_rate: float
    conversion_rate: float
    average_click_position: float | None


class TopQuery(Model):
    query: str
    count: int
    avg_hits: float
    click_through_rate: float


class NoResultQuery(Model):
    query: str
    count: int


class TopClicked(Model):
    document_id: str
    clicks: int
    conversions: int


class SeriesPoint(Model):
    date: str
    searches: int
    no_result_searches: int


class Analytics(Model):
    from_: str = Field(alias="from")
    to: str
    interval: str
    totals: Totals
    top_queries: list[TopQuery]
    no_result_queries: list[NoResultQuery]
    top_clicked: list[TopClicked]
    series: list[SeriesPoint]


class Event(Model):
    """A click or conversion on a hit of the search answer ``query_id`` (``POST /v1/events``)."""

    type: Literal["click", "conversion"]
    query_id: str
    document_id: str
    position: int | None = None
    user_token: str | None = None


class EventsAccepted(Model):
    accepted: int


__all__ = [
    "Analytics", "Boost", "CustomSuggestion", "Event", "EventsAccepted", "FacetNode", "FacetValue",
    "FacetValuesAnswer", "Facets", "Feed", "FlushAnswer", "Hit",
    "IndexInfo", "Integration", "IntegrationSettings", "MappingUsage", "MatchedRule", "Model", "MultiSearchAnswer",
    "NoResultQuery",
    "Page", "PopularQueries", "Profile", "ProjectInfo", "QueryField", "RangeCount",
    "ReindexCancelAnswer", "ReplaceSessionInfo", "Rule", "RuleTestAnswer", "SearchAnswer", "Semantic", "SeriesPoint",
    "ServiceState", "SessionUpload", "SolrSynonyms", "SortOption", "Status", "SuggestAnswer", "SuggestedProducts",
    "Suggestion", "SuggestionConfig", "SuggestionSource", "Synonym", "SynonymImport", "Task", "TaskAccepted",
    "TaskError", "TermCount", "TopClicked", "TopQuery", "Totals", "TypoTolerance", "UsageEntry",
]
