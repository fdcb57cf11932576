"""Wire models of search profiles (CONTRACT §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from control_plane.wire import Filter, RequestModel


class Camel(RequestModel):
    """Profile settings, as request bodies take them (strict, no unknown fields)."""


class QueryField(Camel):
    weight: int = Field(1, ge=1, le=100)
    typo: bool = True
    prefix: bool = True


class TypoTolerance(Camel):
    enabled: bool = True
    min_word_size_one_typo: int = Field(4, ge=1, le=20)
    min_word_size_two_typos: int = Field(8, ge=1, le=40)


class SortOption(Camel):
    key: str = Field(min_length=1, max_length=100)
    label: str = Field("", max_length=200)
    sort: list[str] = Field(min_length=1, max_length=5)


class Boost(Camel):
    field: str
    modifier: Literal["none", "log1p", "sqrt"] = "log1p"
    weight: float = Field(1.0, ge=0, le=100)


class SemanticSetting(Camel):
    """Hybrid search over a vector field (CONTRACT §10)."""

    field: str = Field(min_length=1, max_length=128, description="A vector field of the mapping")
    ratio: float = Field(0.5, ge=0, le=1, allow_inf_nan=False,
                         description="0: the keyword ranking exactly; 1: the vector ranking alone")


class ProfileSettings(Camel):
    """Everything of a profile but its identity: what an inline profile carries."""

    query_fields: dict[str, QueryField] = Field(default_factory=dict)
    operator: Literal["and", "or"] = "and"
    typo_tolerance: TypoTolerance = Field(default_factory=TypoTolerance)
    filters: Filter | None = None
    facets: list[str] | None = None
    # fields public-key (storefront) requests may filter on besides ``facets``; unset: the retrieved ones
    filter_fields: list[str] | None = None
    sort_options: list[SortOption] = Field(default_factory=list)
    default_sort: str | None = None
    per_page: int = Field(20, ge=1, le=100)
    retrieve: list[str] | None = None
    highlight: list[str] | None = None
    boosts: list[Boost] = Field(default_factory=list)
    synonyms: bool = True
    rules: bool = True
    analytics: bool = True
    # a keyword field (filterable or facetable): one hit per value, with its groupSize (CONTRACT §5)
    distinct: str | None = Field(None, min_length=1, max_length=128)
    semantic: SemanticSetting | None = None


_READ_ONLY = "Read-only: accepted and ignored, so what GET answered can be sent back."


class ReadOnlyFields(Camel):
    """A profile's identity as GET shows it. Request bodies accept it and ignore it (CONTRACT §5);
    ``exclude`` keeps it out of every dump, so it is never stored nor part of a cache key."""

    id: str | None = Field(None, exclude=True, description=_READ_ONLY)
    profile_key: str | None = Field(None, exclude=True, description=_READ_ONLY)
    index_id: str | None = Field(None, exclude=True, description=_READ_ONLY)
    created_at: str | None = Field(None, exclude=True, description=_READ_ONLY)
    updated_at: str | None = Field(None, exclude=True, description=_READ_ONLY)


class ProfileCreate(ProfileSettings, ReadOnlyFields):
    """The body of POST and PUT ``profiles``."""

    name: str = Field(min_length=1, max_length=200)


class InlineProfile(ProfileSettings, ReadOnlyFields):
    """The ``profile`` of a secret search: a saved profile's body; ``name`` is ignored too."""

    name: str | None = Field(None, exclude=True, description="Accepted and ignored.")


class ProfileOut(ProfileSettings):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=False)

    id: str
    profile_key: str
    name: str
    index_id: str
    created_at: str
    updated_at: str


class ProfileList(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    items: list[ProfileOut]
    next_cursor: str | None
