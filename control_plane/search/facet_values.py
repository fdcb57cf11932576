"""Facet value search (CONTRACT §9): what a shopper types in a facet's search box ("sam") finds the
facet's values (Samsung, Samsonite) with the counts of the current search.

The engine matches and counts (``search_workers.engine.facet_search``): every typed word starts a
word of the value, or is one typo from doing so; counts are disjunctive, as facet counts are.
Here: the request bodies, and the highlighted form of each value.
"""

from __future__ import annotations

import html
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from shared.limits import MAX_QUERY_CHARS
from shared.text import atoms, fold, osa_distance

_WORD = re.compile(r"[^\W_]+")
MAX_FACET_QUERY_CHARS = 200


class FacetValuesAsk(BaseModel):
    """Which facet, what was typed in its search box, how many values."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    field: str = Field(min_length=1, max_length=200)
    q: str = Field("", max_length=MAX_FACET_QUERY_CHARS)
    limit: int = Field(10, ge=1, le=100)


class FacetValuesRequest(FacetValuesAsk):
    """The body of the facet-values routes: the facet, and the search whose counts the values carry."""

    query: str = Field("", max_length=MAX_QUERY_CHARS, description="The text of the current search")
    filters: dict[str, Any] | None = None
    profile_key: str | None = Field(None, max_length=100, description="Secret route: a saved profile")
    profile: dict[str, Any] | None = Field(None, description="Secret route: profile settings to try")


def typed_words(q: str) -> tuple[str, ...]:
    """What decides the matching values: the typed words as the engine cuts them."""
    return tuple(atoms(q))


def highlighted(value: str, words: tuple[str, ...]) -> str:
    """``value`` HTML-escaped, the part of each of its words that a typed word met in ``<em>``
    (a whole word where the meeting took a typo)."""
    out: list[str] = []
    at = 0
    for match in _WORD.finditer(value):
        word = match.group()
        folded = fold(word)
        best = max((len(w) for w in words if folded.startswith(w)), default=0)
        if not best and any(len(w) >= 4 and folded[:1] == w[:1] for w in words):
            best = len(word) if any(_near(w, folded) for w in words) else 0
        if not best:
            continue
        cut = best if len(folded) == len(word) else len(word)  # folding changed the length: the whole word
        out.append(html.escape(value[at:match.start()]))
        out.append("<em>" + html.escape(word[:cut]) + "</em>" + html.escape(word[cut:]))
        at = match.end()
    out.append(html.escape(value[at:]))
    return "".join(out)


def _near(typed: str, word: str) -> bool:
    n = len(typed)
    return any(osa_distance(typed, word[:k], 1) <= 1 for k in (n - 1, n, n + 1) if 0 < k <= len(word))


FACET_VALUES_ANSWER: dict[str, Any] = {
    "title": "FacetValuesAnswer",
    "type": "object",
    "required": ["values", "tookMs"],
    "properties": {
        "values": {"type": "array", "items": {
            "type": "object", "required": ["value", "highlighted", "count"],
            "properties": {"value": {"type": "string"}, "highlighted": {"type": "string"},
                           "count": {"type": "integer"}}}},
        "tookMs": {"type": "number"},
    },
}
