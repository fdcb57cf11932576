"""Wire models of synonyms (CONTRACT §6)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from control_plane.wire import RequestModel

MAX_TERMS = 50
MAX_TERM_CHARS = 100
MAX_TERM_WORDS = 5
MAX_IMPORT_ITEMS = 20_000
MAX_SOLR_CHARS = 2_000_000

_READ_ONLY = "Read-only: accepted and ignored, so an exported item can be imported again."


class SynonymIn(RequestModel):
    """``multiway``: ``terms`` all find each other. ``oneway``: ``input`` also finds ``synonyms``."""

    type: Literal["multiway", "oneway"]
    terms: list[str] | None = Field(None, max_length=MAX_TERMS)
    input: str | None = None
    synonyms: list[str] | None = Field(None, max_length=MAX_TERMS)
    enabled: bool = True
    id: str | None = Field(None, exclude=True, description=_READ_ONLY)
    created_at: str | None = Field(None, exclude=True, description=_READ_ONLY)
    updated_at: str | None = Field(None, exclude=True, description=_READ_ONLY)


class SynonymImport(RequestModel):
    """Exactly one of ``items`` (JSON entries) or ``solr`` (Solr synonyms text)."""

    items: list[dict[str, Any]] | None = Field(None, max_length=MAX_IMPORT_ITEMS)
    solr: str | None = Field(None, max_length=MAX_SOLR_CHARS)
    mode: Literal["append", "replace"] = "append"


class SynonymOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: str
    type: Literal["multiway", "oneway"]
    terms: list[str] | None = None
    input: str | None = None
    synonyms: list[str] | None = None
    enabled: bool
    created_at: str
    updated_at: str


class SynonymList(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    items: list[SynonymOut]
    next_cursor: str | None = None


class ImportResult(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    imported: int
    total: int
    mode: Literal["append", "replace"]


class SolrExport(BaseModel):
    solr: str
