"""Wire models of autocomplete (CONTRACT §6)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from control_plane.wire import RequestModel


class Camel(RequestModel):
    """Autocomplete settings, as request bodies take them (strict, no unknown fields)."""


class Source(Camel):
    field: str = Field(min_length=1, max_length=200)
    weight: float = Field(1.0, ge=0, le=100)


class PopularQueries(Camel):
    enabled: bool = True
    min_searches: int = Field(5, ge=1, le=1_000_000)
    days: int = Field(30, ge=1, le=365)


class Products(Camel):
    enabled: bool = False
    count: int = Field(4, ge=1, le=20)
    profile_key: str | None = Field(None, max_length=100)


class SuggestionSettings(Camel):
    """The body of PUT ``suggestions/config``; the read-only fields GET answers are accepted and ignored."""

    enabled: bool = True
    suggest_key: str | None = Field(None, exclude=True, description="Read-only: accepted and ignored.")
    sources: list[Source] = Field(default_factory=list, max_length=20)
    popular_queries: PopularQueries = Field(default_factory=PopularQueries)
    max_suggestions: int = Field(8, ge=1, le=20)
    products: Products = Field(default_factory=Products)
    typo_tolerance: bool = True
    built_at: str | None = Field(None, exclude=True, description="Read-only: accepted and ignored.")
    built_count: int | None = Field(None, exclude=True, description="Read-only: accepted and ignored.")


class SuggestionConfigOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    enabled: bool
    suggest_key: str
    sources: list[Source]
    popular_queries: PopularQueries
    max_suggestions: int
    products: Products
    typo_tolerance: bool
    built_at: str | None = Field(None, description="When the served suggestions were last rebuilt.")
    built_count: int = Field(0, description="How many suggestions the last rebuild kept.")


class CustomSuggestionIn(Camel):
    text: str = Field(min_length=1, max_length=200)
    weight: int = Field(1, ge=0, le=1000)


class CustomSuggestionOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: str
    text: str
    weight: int
    created_at: str


class CustomSuggestionList(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    items: list[CustomSuggestionOut]
    next_cursor: str | None


class SuggestRequest(Camel):
    q: str = Field("", max_length=200, description="What the shopper typed; empty: the best suggestions.")
    limit: int | None = Field(None, ge=1, le=20, description="At most this many (never more than maxSuggestions).")


class Suggestion(BaseModel):
    text: str
    highlighted: str
    source: str = Field(description="`custom`, `popular`, or the field it came from.")


class SuggestAnswer(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    suggestions: list[Suggestion]
    products: list[dict[str, Any]] | None = Field(None, description="Hits of the products profile, when enabled.")
    took_ms: float
