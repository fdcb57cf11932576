"""Wire models of synonyms (CONTRACT §6)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from control_plane.wire import OmittedWhenNone, RequestModel

MAX_TERMS = 50
MAX_TERM_CHARS = 100
MAX_TERM_WORDS = 5
MAX_IMPORT_ITEMS = 20_000
MAX_SOLR_CHARS = 2_000_000
#: terms in one import, all entries together (its checking is the work an import costs)
MAX_IMPORT_TERMS = 200_000

_READ_ONLY = "Read-only: accepted and ignored, so an exported item can be imported again."


_NONE: JsonDict = {"type": "null"}


class SynonymIn(RequestModel):
    """``multiway``: ``terms`` all find each other. ``oneway``: ``input`` also finds ``synonyms``."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"properties": {"type": {"const": "multiway"}, "terms": {"type": "array", "minItems": 2},
                        "input": _NONE, "synonyms": _NONE}, "required": ["terms"]},
        {"properties": {"type": {"const": "oneway"}, "input": {"type": "string"},
                        "synonyms": {"type": "array", "minItems": 1}, "terms": _NONE},
         "required": ["input", "synonyms"]},
    ]})

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

    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"properties": {"items": {"type": "array"}, "solr": _NONE}, "required": ["items"]},
        {"properties": {"solr": {"type": "string"}, "items": _NONE}, "required": ["solr"]},
    ]})

    items: list[SynonymIn] | None = Field(None, max_length=MAX_IMPORT_ITEMS)
    solr: str | None = Field(None, max_length=MAX_SOLR_CHARS)
    mode: Literal["append", "replace"] = "append"


class SynonymOut(BaseModel):
    """``terms`` for a multiway entry, ``input`` and ``synonyms`` for a oneway one: the others are left out."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: str
    type: Literal["multiway", "oneway"]
    terms: OmittedWhenNone[list[str]] = None
    input: OmittedWhenNone[str] = None
    synonyms: OmittedWhenNone[list[str]] = None
    enabled: bool
    created_at: str
    updated_at: str


class SynonymList(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    items: list[SynonymOut]
    next_cursor: str | None = Field(description="Null on the last page (an export is one page: always null)")


class ImportResult(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    imported: int
    total: int
    mode: Literal["append", "replace"]


class SolrExport(BaseModel):
    solr: str
