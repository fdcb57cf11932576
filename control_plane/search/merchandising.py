"""Synonyms and ranking rules at search time.

An index's synonyms and rules are compiled once per change (``indices.merch_version``, read with
the index row whenever a search resolves it again) and shared by every search of the index.

A search with applied rules becomes: the query text replaced (``replaceQuery``), the added
filters ANDed in (they narrow facet counts too, as a profile's filters do), boosts and buries as
the engine's ``boost_filters``, hidden and pinned documents excluded from the organic results, and
the pinned documents that still exist and pass the search's filters placed at their 1-based
positions across pages. ``total`` counts them; facet counts are those of the organic results.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy.orm import Session

from control_plane.index.models import Index
from control_plane.rule import repository as rules_repo
from control_plane.rule.matching import Effects, RuleSet, compile_rule
from control_plane.synonym import repository as synonyms_repo
from control_plane.synonym.matching import SynonymSet
from shared.contract import Answer, Hit, Query


@dataclass(frozen=True)
class Merch:
    version: int
    synonyms: SynonymSet
    rules: RuleSet


EMPTY = Merch(0, SynonymSet(), RuleSet())


def load_merch(db: Session, index_id: str, version: int) -> Merch:
    synonyms = SynonymSet((s.type, list(s.terms), s.input, list(s.synonyms))
                          for s in synonyms_repo.enabled_for_index(db, index_id))
    rules = RuleSet(compile_rule(r.id, r.name, r.enabled, r.position, r.body)
                    for r in rules_repo.all_for_index(db, index_id))
    return Merch(version, synonyms, rules)


class MerchCache:
    """Compiled merchandising per index, replaced when the index's ``merch_version`` moves."""

    def __init__(self) -> None:
        self._items: dict[str, Merch] = {}
        self._lock = threading.Lock()

    def of(self, db: Session, index: Index) -> Merch:
        version = index.merch_version or 0
        if version == 0:  # never had a synonym or a rule
            return EMPTY
        with self._lock:
            cached = self._items.get(index.id)
        if cached is not None and cached.version == version:
            return cached
        merch = load_merch(db, index.id, version)
        with self._lock:
            if len(self._items) > 10_000:
                self._items.clear()
            self._items[index.id] = merch
        return merch


def and_filters(base: dict[str, Any] | None, added: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not added:
        return base
    merged = dict(base or {})
    merged["and"] = [*merged.get("and", []), *added]
    return merged


def shaped_query(query: Query, effects: Effects, q: str, synonyms: dict[str, Any] | None) -> Query:
    """The engine query with the rules' effects (and the synonyms of the text it searches)."""
    excluded = tuple(dict.fromkeys([*query.exclude_ids, *sorted(effects.hide), *(doc for doc, _ in effects.pins)]))
    return msgspec.structs.replace(
        query,
        q=q,
        filters=and_filters(query.filters, effects.add_filters),
        boost_filters=(*query.boost_filters, *effects.boosts),
        exclude_ids=excluded,
        synonyms=synonyms,
    )


Search = Callable[[Query], Awaitable[Answer]]


def _placed(pins: list[tuple[Hit, int]], organic_total: int, start: int, stop: int) -> tuple[int, dict[int, Hit]]:
    """How many pins come before ``start`` and the pins on ``[start, stop)`` by 0-based position, a pin
    past the end of the list moving up to right after the last organic hit."""
    before = 0
    inside: dict[int, Hit] = {}
    for k, (hit, position) in enumerate(pins, start=1):
        at = min(position, organic_total + k) - 1
        if at < start:
            before += 1
        elif at < stop:
            inside[at] = hit
    return before, inside


async def search_with_pins(run: Search, query: Query, pins: list[tuple[str, int]]) -> tuple[Answer, set[str]]:
    """The merged answer with the pinned documents placed; also the ids of those placed.

    One fan-out: the shards answer the pinned documents that pass the filters (``Query.pin_ids``)
    beside the organic hits, which start up to ``len(pins)`` places early so that whichever pins
    turn out to exist, the organic hits around them are in hand. With ``distinct`` a pinned document
    stands for its group, so its group must be known first: a lookup, then the organic search."""
    if query.distinct is not None:
        return await _search_with_grouped_pins(run, query, pins)
    start, stop = query.offset, query.offset + query.limit
    first = max(0, start - len(pins))
    answer = await run(msgspec.structs.replace(query, offset=first, limit=max(stop - first, 1),
                                               pin_ids=tuple(doc for doc, _ in pins)))
    found = {hit.id: hit for hit in answer.pinned}
    live = [(found[doc], position) for doc, position in pins if doc in found]
    before, _ = _placed(live, answer.total, start, stop)
    return _placed_page(answer, live, start, stop, answer.hits[start - before - first:])


def _placed_page(answer: Answer, live: list[tuple[Hit, int]], start: int, stop: int,
                 organic_hits: list[Hit]) -> tuple[Answer, set[str]]:
    """``answer`` with its hits replaced by page ``[start, stop)``: the pins in their places and
    ``organic_hits`` (the organic list from this page's first organic position) around them."""
    _, inside = _placed(live, answer.total, start, stop)
    organic = iter(organic_hits[: max((stop - start) - len(inside), 0)])
    hits: list[Hit] = []
    for at in range(start, stop):
        hit = inside.get(at) or next(organic, None)
        if hit is None:
            break
        hits.append(hit)
    answer.hits = hits
    answer.pinned = []
    answer.total += len(live)
    return answer, {hit.id for hit in inside.values()}


async def _search_with_grouped_pins(run: Search, query: Query, pins: list[tuple[str, int]]) -> tuple[Answer, set[str]]:
    """``search_with_pins`` with ``distinct``: the organic results leave out the groups of the pinned
    documents, so no other variant of a pinned product shows beside it."""
    group = query.distinct
    assert group is not None
    retrieve = query.retrieve
    if retrieve is not None and group not in retrieve:
        retrieve = (*retrieve, group)
    lookup = msgspec.structs.replace(
        query, q="", facets=(), sort=(), offset=0, limit=0, boosts=(), boost_filters=(), synonyms=None,
        highlight=(), relax=False, distinct=None, retrieve=retrieve, pin_ids=tuple(doc for doc, _ in pins),
    )
    found = {hit.id: hit for hit in (await run(lookup)).pinned}
    live = [(found[doc], position) for doc, position in pins if doc in found]
    values = sorted({v for pinned, _ in live if isinstance(v := pinned.document.get(group), str | int | float | bool)},
                    key=str)
    if values:
        query = msgspec.structs.replace(query, filters=and_filters(query.filters, [{"not": {group: values}}]))
    if retrieve is not query.retrieve:
        for pinned, _ in live:
            pinned.document.pop(group, None)
    start, stop = query.offset, query.offset + query.limit
    total = 1 << 62
    answer: Answer | None = None
    for _ in range(2):  # again only when few organic hits move a pin of this page
        before, inside = _placed(live, total, start, stop)
        organic_offset, organic_limit = start - before, (stop - start) - len(inside)
        answer = await run(msgspec.structs.replace(query, offset=organic_offset, limit=max(organic_limit, 1)))
        if _placed(live, answer.total, start, stop) == (before, inside):
            break
        total = answer.total
    assert answer is not None
    return _placed_page(answer, live, start, stop, answer.hits)
