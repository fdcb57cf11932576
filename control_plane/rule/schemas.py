"""Wire models of ranking rules (CONTRACT §6)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from control_plane.wire import Filter, JsonDateTime, RequestModel

MAX_CONDITIONS = 25
MAX_PINS = 50
MAX_HIDDEN = 500
MAX_BOOSTS = 20
MAX_WINDOWS = 20
MAX_PATTERN_CHARS = 200
MAX_USER_DATA_BYTES = 10_000

_READ_ONLY = "Read-only: accepted and ignored, so what GET answered can be sent back."


class Condition(RequestModel):
    """Matches the normalized query (case, accents, punctuation and plurals folded) word by word."""

    pattern: str = Field(max_length=MAX_PATTERN_CHARS)
    anchoring: Literal["is", "startsWith", "endsWith", "contains"]


class Window(RequestModel):
    """A validity window; ``from`` inclusive, ``until`` exclusive, either open when left out."""

    from_: JsonDateTime | None = Field(None, alias="from")
    until: JsonDateTime | None = None


class Pin(RequestModel):
    id: str = Field(min_length=1, max_length=512)
    position: int = Field(ge=1, le=1000, description="1-based position in the whole result list")


class Boost(RequestModel):
    filters: Filter
    weight: float = Field(1.0, gt=0, le=100, description="score x (1 + weight) for matching documents")


class Bury(RequestModel):
    filters: Filter
    weight: float = Field(0.5, gt=0, le=1, description="score x (1 - weight): 1 sinks them below everything")


class Consequence(RequestModel):
    pin: list[Pin] = Field(default_factory=list, max_length=MAX_PINS)
    hide: list[str] = Field(default_factory=list, max_length=MAX_HIDDEN)
    boost: list[Boost] = Field(default_factory=list, max_length=MAX_BOOSTS)
    bury: list[Bury] = Field(default_factory=list, max_length=MAX_BOOSTS)
    add_filters: Filter | None = None
    replace_query: str | None = Field(None, max_length=512)
    redirect: str | None = Field(None, max_length=2000)
    user_data: dict[str, Any] | None = None


class RuleIn(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    enabled: bool = True
    position: int | None = Field(None, ge=1, description="1-based; left out: after the last rule")
    conditions: list[Condition] = Field(default_factory=list, max_length=MAX_CONDITIONS)
    filters: Filter | None = Field(None, description="The search's filters must hold these values")
    validity: list[Window] = Field(default_factory=list, max_length=MAX_WINDOWS)
    consequence: Consequence
    id: str | None = Field(None, exclude=True, description=_READ_ONLY)
    created_at: str | None = Field(None, exclude=True, description=_READ_ONLY)
    updated_at: str | None = Field(None, exclude=True, description=_READ_ONLY)


class RuleOrder(RequestModel):
    ids: list[str] = Field(max_length=100_000)


class RuleTest(RequestModel):
    """Try the saved rules (and ``rule``, an unsaved one, at its position) on a query."""

    q: str = Field("", max_length=512)
    filters: Filter | None = None
    rule: RuleIn | None = None
    profile_key: str | None = Field(None, max_length=100)
    page: int = Field(1, ge=1, le=1000)
    per_page: int | None = Field(None, ge=1, le=100)


class RuleOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

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


class RuleList(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    items: list[RuleOut]
    next_cursor: str | None


class MatchedRule(BaseModel):
    id: str
    name: str
    enabled: bool
    active: bool = Field(description="enabled and inside a validity window now")


class RuleTestOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    matched_rules: list[MatchedRule]
    applied_rules: list[str]
    hits: list[dict[str, Any]]
    total: int
    redirect: str | None = None
    user_data: list[dict[str, Any]] | None = None
