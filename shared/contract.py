"""The typed engine contract: what crosses from the control plane to the shard hosts and the engine,
and back. Defined once; the control plane builds a :class:`Query` per search, the hosts copy it once
per fan-out (:func:`shard_query`), the engine reads it by attribute and answers an :class:`Answer`.

msgspec ``Struct``s, chosen for the hot path: typed and slot-backed, several times cheaper to build,
copy and pickle (Ray ships them to shard actors) than dataclasses or pydantic models, and they need
no validation pass: the control plane has validated the request before it builds a query.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec
from msgspec import Struct, field

__all__ = [
    "Answer",
    "Boost",
    "BoostFilter",
    "Change",
    "Facet",
    "FacetCounts",
    "FacetRange",
    "FieldWeight",
    "Hit",
    "Query",
    "Semantic",
    "ShardSpec",
    "SortKey",
    "Typo",
    "group_key_of",
    "shard_query",
]

DEFAULT_LIMIT = 20
DEFAULT_FACET_SIZE = 10
RELEVANCE_KEYS = frozenset({"_score", "_relevance", "relevance"})


class FieldWeight(Struct, frozen=True):
    """How one searchable field takes part in a query."""

    weight: float = 1.0
    typo: bool = True
    prefix: bool = True


class Typo(Struct, frozen=True):
    enabled: bool = True
    min_word_size_one_typo: int = 4
    min_word_size_two_typos: int = 8


class FacetRange(Struct, frozen=True):
    """``start`` inclusive, ``end`` exclusive; numbers, or dates as the mapping reads them."""

    start: float | int | str | None = None
    end: float | int | str | None = None
    label: str | None = None


class Facet(Struct, frozen=True):
    """Counts of a field's values over a query's matches, without the query's filter on the field.

    ``terms``: ``{value: count}``; ``range``: a count per range of ``ranges``; ``hierarchy`` (a
    field of paths joined by ``separator``): ``{path: count}`` for level 0 and the children of each
    path of ``expand``; ``values`` (a facet value search): ``{value: count}`` of the values whose
    words start with (or are one typo from) the words of ``prefix``."""

    field: str
    type: Literal["terms", "range", "hierarchy", "values"] = "terms"
    size: int | None = DEFAULT_FACET_SIZE
    sort: Literal["count", "alpha"] = "count"
    ranges: tuple[FacetRange, ...] = ()
    separator: str = " > "
    expand: tuple[str, ...] = ()
    prefix: str = ""


class SortKey(Struct, frozen=True):
    """A sortable field, or one of :data:`RELEVANCE_KEYS` for the score. A ``geopoint`` field sorts
    by the distance of its point from ``near`` (``(lat, lng)``), nearest first; the hit's sort
    value is that distance in meters."""

    field: str
    desc: bool = False
    near: tuple[float, float] | None = None

    @property
    def relevance(self) -> bool:
        return self.field in RELEVANCE_KEYS


class Boost(Struct, frozen=True):
    """score x ``(1 + weight * modifier(max(value, 0)))`` over a numeric field."""

    field: str
    modifier: Literal["none", "log1p", "sqrt"] = "log1p"
    weight: float = 1.0


class BoostFilter(Struct, frozen=True):
    """score x ``max(0, 1 + weight)`` for documents matching ``filters``."""

    filters: dict[str, Any]
    weight: float = 0.0


class Semantic(Struct, frozen=True):
    """Rank by a vector field too: each candidate's score becomes ``(1 - ratio) * k + ratio *
    max(cosine, 0) * clip(1 - k, 0, 1)`` (``k``: its keyword score over the engine's score of a
    document matching every word, 0 when the words do not match it), and the
    ``depth`` documents nearest the query's vector join the keyword matches. ``ratio`` 1 (or no
    words): the nearest documents alone, by cosine. The query's vector is ``vector`` or, for a
    built-in field, ``text`` embedded by the field's model."""

    field: str
    ratio: float
    vector: tuple[float, ...] | None = None
    text: str | None = None
    depth: int = 100


class Query(Struct, frozen=True, kw_only=True):
    """One search as the engine evaluates it (see the engine's ``search`` for the semantics).

    ``filters`` is the nested filter expression of the API (CONTRACT §5), already validated.
    ``synonyms``: per phrase of the query (one or more words), alternatives of one or more words (all
    must match); a key ``"~word"`` applies only where ``word`` is not a term of the shard (a typo).
    ``relax``: with operator ``and`` and no result, drop words until something matches.
    ``timeout_ms``: past it, the engine stops at its next check with ``SearchTimeout``.
    ``distinct``: a keyword field; one hit per value (the best ranked by the query's order), each
    with ``Hit.group_size``; ``total`` counts groups, facets still count documents. A document
    without a value is a group of its own.
    ``pin_ids``: documents to answer in ``Answer.pinned`` when they exist and pass ``filters``,
    whatever ``q`` and ``exclude_ids`` say (a ranking rule's pins, placed by the control plane).
    ``hierarchies``: fields of paths (field -> separator) whose filter values match their paths
    and every path below them (category trees).
    ``semantic``: hybrid or vector ranking over a vector field (:class:`Semantic`).
    """

    q: str = ""
    fields: dict[str, FieldWeight] | None = None
    operator: Literal["and", "or"] = "and"
    typo: Typo = Typo()
    filters: dict[str, Any] | None = None
    facets: tuple[Facet, ...] = ()
    sort: tuple[SortKey, ...] = ()
    offset: int = 0
    limit: int = DEFAULT_LIMIT
    highlight: tuple[str, ...] = ()
    retrieve: tuple[str, ...] | None = None
    boosts: tuple[Boost, ...] = ()
    boost_filters: tuple[BoostFilter, ...] = ()
    synonyms: dict[str, tuple[tuple[str, ...], ...]] | None = None
    exclude_ids: tuple[str, ...] = ()
    relax: bool = True
    timeout_ms: float | None = None
    distinct: str | None = None
    pin_ids: tuple[str, ...] = ()
    hierarchies: dict[str, str] | None = None
    semantic: Semantic | None = None


def shard_query(query: Query) -> Query:
    """The query every shard answers: its own top ``offset + limit`` hits from position 0, so the
    merged top ``offset + limit`` is in the union of the shards' lists."""
    if query.offset == 0:
        return query
    return msgspec.structs.replace(query, offset=0, limit=query.offset + query.limit)


FacetCounts = dict[str, int] | list[int]
"""A terms facet: ``{value: count}`` (display order after a merge); a range facet: one count per range."""


class Hit(Struct):
    id: str
    score: float
    document: dict[str, Any]
    highlights: dict[str, str] = field(default_factory=dict)
    sort_values: list[Any] = field(default_factory=list)
    """One value per sort key (``None`` when missing), then the score."""
    group_size: int | None = None
    """With ``Query.distinct``: the documents of the hit's group that match (else ``None``)."""
    group_key: int | None = None
    """With ``Query.distinct``: the group's key (``group_key_of`` its value; ``None``: no value)."""


class Answer(Struct):
    """A shard's answer, and the merged answer of an index (same shape).

    ``applied_seq``: the sequence the answering replica had applied (a shard answer);
    ``partial``: some shard only had replicas behind the latest known sequence (a merged answer).
    With ``Query.distinct``, ``total`` counts groups and a shard answer also carries every matching
    group: ``group_keys`` (``<u8`` keys, see :func:`group_key_of`, in no order) with ``group_counts``
    (``<i8`` documents per key) as raw bytes (cheap to pickle), and ``ungrouped`` (matching documents
    without a value: a group each). A merged answer leaves them empty.
    ``pinned``: the hits of ``Query.pin_ids`` (every shard's, in a merged answer; not in ``hits``).
    """

    total: int = 0
    hits: list[Hit] = field(default_factory=list)
    facets: dict[str, FacetCounts] = field(default_factory=dict)
    relaxed: bool = False
    dropped_words: list[str] = field(default_factory=list)
    applied_seq: int = 0
    partial: bool = False
    group_keys: bytes = b""
    group_counts: bytes = b""
    ungrouped: int = 0
    pinned: list[Hit] = field(default_factory=list)


def group_key_of(value: str) -> int:
    """A group value's key, the same in every process (``hash()`` of a str is not): the first 8
    bytes of its BLAKE2b digest. Two of a million values collide with a probability near 3e-8."""
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class Change(Struct, frozen=True):
    """One change of an index's documents, numbered by the database's sequence.

    ``upsert`` (``id``, ``doc``), ``delete`` (``id``), ``flush`` (every document before it is gone),
    ``advance`` (nothing changes, but the shard has now applied everything of its own up to ``seq``:
    the one way to move a shard that received none of a task's documents).
    """

    seq: int
    op: Literal["upsert", "delete", "flush", "advance"]
    id: str | None = None
    doc: dict[str, Any] | None = None


class ShardSpec(Struct, frozen=True):
    """One generation of an index's shards: how many, how replicated, with which mapping."""

    index_id: str
    generation: int
    shards: int
    replicas: int
    mapping: dict[str, Any]
    language: str = "en"

    def __post_init__(self) -> None:
        index_id = self.index_id
        if not index_id or "/" in index_id or "\\" in index_id or ":" in index_id or index_id in (".", ".."):
            raise ValueError(f"invalid index id {index_id!r}")
        if self.shards < 1 or self.replicas < 1 or self.generation < 0:
            raise ValueError("shards and replicas must be >= 1 and generation >= 0")
