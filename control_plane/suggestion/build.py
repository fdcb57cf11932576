"""The ``suggestions.rebuild`` task: gather candidates, drop those that find nothing, score, store.

Candidates come from the configured source fields of the live documents, from popular queries
(analytics: searches that found results), and from the custom suggestions. Each text is scored
``weight x (1 + ln(1 + evidence))`` per source, where the evidence is the number of documents
holding the value (fields) plus the searches that found results and three times the clicks of
that text as a query (popularity, every source). The output keeps every source's score, so
disabling a source takes effect before the next rebuild (see ``serving``).

Never a suggestion from the catalog or from shoppers that finds nothing: a field value of a live
document in a field the verification search queries finds at least that document; every other
such candidate (popular queries, values of fields the search does not query) is searched on the
serving shards, through the products profile when one is set, else the index's default settings.
The merchant's custom suggestions are kept whatever the catalog holds (a landing page, a campaign
or a redirect rule may stand behind one), shown as the merchant wrote them.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterable
from typing import Any

import orjson
from sqlalchemy.orm import Session, sessionmaker

from control_plane.analytics.service import popular_queries
from control_plane.db import utcnow
from control_plane.document import repository as documents
from control_plane.index import repository as index_rows
from control_plane.index.models import Index
from control_plane.profile import repository as profiles
from control_plane.profile.service import settings_of as profile_settings
from control_plane.profile.validation import default_settings as default_profile
from control_plane.search.profile_query import SearchRequest, engine_query
from control_plane.shard import ShardBridge, search_serving
from control_plane.suggestion import repository
from control_plane.suggestion.matcher import words_of
from control_plane.suggestion.quality import MIN_CLIENTS, acceptable
from control_plane.suggestion.schemas import SuggestionSettings
from control_plane.suggestion.service import settings_of
from control_plane.task.queue import TaskFailed
from control_plane.task.registry import TaskContext

log = logging.getLogger("shopsearch.suggestions")

MAX_TEXT_CHARS = 120
MAX_SUGGESTIONS = 200_000
POPULAR_WEIGHT = 1.0
CLICK_FACTOR = 3
VERIFY_BATCH = 16
POPULAR_LIMIT = 1000


def _values(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, str):
                yield v


class Candidates:
    """Texts by their normalized form: the display text, and evidence per source.

    A text the catalog spells several ways ("OtterBox" 175 times, "Otterbox" 16) is displayed as
    its most common spelling, the first in code-point order on a tie: the same whatever order the
    database returns the documents in (the first one seen used to win, and that order moves as rows
    are rewritten). A shopper's spelling (``catalog=False``) shows only for a text the catalog lacks;
    a merchant's own text always shows as written."""

    def __init__(self) -> None:
        self.text: dict[str, str] = {}
        self.evidence: dict[str, dict[str, float]] = {}
        self.custom: dict[str, tuple[str, float]] = {}  # norm -> (custom id, weight)
        self._seen: dict[str, tuple[str, str] | None] = {}  # raw value -> (display text, norm)
        self._spellings: dict[str, dict[str, int]] = {}  # norm -> catalog spelling -> times seen

    def add(self, raw: str, source: str, evidence: float = 1.0, *, catalog: bool = True) -> str | None:
        if raw in self._seen:  # brands and categories repeat: normalized once each
            known = self._seen[raw]
        else:
            known = self._seen[raw] = self._normalize(raw, MAX_TEXT_CHARS)
        if known is None:
            return None
        text, norm = known
        if catalog:
            seen = self._spellings.setdefault(norm, {})
            seen[text] = times = seen.get(text, 0) + 1
            shown = self.text.get(norm)
            if norm in self.custom:
                pass  # shown as the merchant wrote it
            elif shown is None or shown not in seen or (-times, text) < (-seen[shown], shown):
                self.text[norm] = text
        else:
            self.text.setdefault(norm, text)
        self._count(norm, source, evidence)
        return norm

    def add_custom(self, raw: str, suggestion_id: str, weight: float) -> str | None:
        """A merchant's text: any length the API takes, displayed as written."""
        known = self._normalize(raw, None)
        if known is None:
            return None
        text, norm = known
        self.text[norm] = text
        self.custom[norm] = (suggestion_id, weight)
        self._count(norm, "custom", 0.0)
        return norm

    def _count(self, norm: str, source: str, evidence: float) -> None:
        per = self.evidence.get(norm)
        if per is None:
            per = self.evidence[norm] = {}
        per[source] = per.get(source, 0.0) + evidence

    def drop(self, norm: str) -> None:
        """Forget what the catalog and shoppers gave for ``norm``; a custom text stays."""
        if norm in self.custom:
            self.evidence[norm] = {"custom": self.evidence[norm].get("custom", 0.0)}
        else:
            self.evidence.pop(norm, None)

    @staticmethod
    def _normalize(raw: str, max_chars: int | None) -> tuple[str, str] | None:
        text = " ".join(raw.split())
        if not text or (max_chars is not None and len(text) > max_chars):
            return None
        norm = " ".join(words_of(text))
        return (text, norm) if norm else None


def _gather(db: Session, index: Index, settings: SuggestionSettings, trusted_fields: set[str],
            ) -> tuple[Candidates, set[str], dict[str, float]]:
    """The candidates, the normalized texts that need a search to be kept, and popularity per text."""
    found = Candidates()
    unverified: set[str] = set()
    fields = [s.field for s in settings.sources]
    if fields:
        for body in documents.live_bodies(db, index.id):
            if not isinstance(body, dict):
                continue
            for name in fields:
                for value in set(_values(body.get(name))):
                    norm = found.add(value, name)
                    if norm is not None and name not in trusted_fields:
                        unverified.add(norm)
    popularity: dict[str, float] = {}
    for pq in popular_queries(db, index.id, days=settings.popular_queries.days, min_searches=1,
                              min_clients=MIN_CLIENTS, limit=POPULAR_LIMIT):
        norm = " ".join(words_of(pq.query))
        if not norm or not acceptable(pq.query, index.language):
            continue
        popularity[norm] = popularity.get(norm, 0.0) + pq.searches_with_results + CLICK_FACTOR * pq.clicks
        pop = settings.popular_queries
        if pop.enabled and pq.searches >= pop.min_searches and pq.searches_with_results > 0:
            added = found.add(pq.query, "popular", 0.0, catalog=False)
            if added is not None:
                unverified.add(added)
    for custom in repository.custom_of_index(db, index.id):
        found.add_custom(custom.text, custom.id, float(custom.weight))  # never searched: always kept
    return found, unverified, popularity


def _verification(db: Session, index: Index, settings: SuggestionSettings) -> tuple[Any, set[str]]:
    """The profile settings a suggestion is searched with, and the fields it queries."""
    mapping = index.serving_mapping or index.mapping
    key = settings.products.profile_key
    profile = profiles.by_key(db, key, index_id=index.id) if key else None
    verify = profile_settings(profile) if profile is not None else default_profile(mapping, [])
    # profiles (and the defaults) query searchable fields only; a profile filter may exclude the document
    trusted = set() if verify.filters else set(verify.query_fields)
    return verify, trusted


def _finds_something(bridge: ShardBridge, index: Index, verify: Any, texts: list[str],
                     timeout_ms: float) -> dict[str, bool]:
    spec = index.shard_spec()
    mapping = index.serving_mapping or index.mapping

    async def reload() -> Any:
        return spec

    async def one(text: str) -> bool:
        query, _ = engine_query(verify, SearchRequest(q=text, per_page=1, facets=[]), [], mapping,
                                timeout_ms=timeout_ms)
        answer = await search_serving(bridge, spec, query, reload)
        return answer.total > 0 and not answer.relaxed  # relaxed: it found only by dropping words

    async def run() -> dict[str, bool]:
        out: dict[str, bool] = {}
        for start in range(0, len(texts), VERIFY_BATCH):
            batch = texts[start:start + VERIFY_BATCH]
            results = await asyncio.gather(*(one(t) for t in batch))  # a failure fails (or retries) the task
            out.update(zip(batch, results, strict=True))
        return out

    return asyncio.run(run())


def _score(weight: float, evidence: float) -> float:
    return round(weight * (1.0 + math.log1p(max(0.0, evidence))), 6)


def build(sessions: sessionmaker[Session], bridge: ShardBridge, index_id: str,
          checkpoint: Any = None, timeout_ms: float = 2000.0) -> dict[str, int]:
    """Compute and store the index's suggestions; counts for the task's details."""
    with sessions() as db:
        index = index_rows.detached_index(db, index_id)
        row = repository.config_by_index(db, index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        if row is None:
            return {"suggestions": 0}
        settings = settings_of(row)
        seq, generation = index.seq, index.serving_generation
        verify, trusted = _verification(db, index, settings)
        found, unverified, popularity = _gather(db, index, settings, trusted)
    if checkpoint is not None:
        checkpoint()
    dropped = 0
    if unverified:
        bridge.open(index.shard_spec())
        texts = sorted(unverified)
        ok = _finds_something(bridge, index, verify, [found.text[n] for n in texts], timeout_ms)
        for norm in texts:
            if not ok.get(found.text[norm]):
                found.drop(norm)
                dropped += 1
    weights = {s.field: s.weight for s in settings.sources}
    items: list[tuple[float, list[Any]]] = []
    for norm, per in found.evidence.items():
        pop = popularity.get(norm, 0.0)
        scored: list[list[Any]] = []
        for source, evidence in per.items():
            if source == "custom":
                weight = found.custom[norm][1]
            elif source == "popular":
                weight = POPULAR_WEIGHT
            else:
                weight = weights.get(source, 0.0)
            scored.append([source, _score(weight, evidence + pop)])
        if not scored:
            continue
        custom_id = found.custom.get(norm, (None, 0.0))[0]
        items.append((max(s for _, s in scored), [found.text[norm], scored, custom_id, norm]))
    items.sort(key=lambda item: (-item[0], item[1][0]))
    if len(items) > MAX_SUGGESTIONS:  # the merchant's own texts are kept first
        custom = [item for item in items if item[1][2] is not None]
        rest = [item for item in items if item[1][2] is None][:max(0, MAX_SUGGESTIONS - len(custom))]
        items = sorted(custom + rest, key=lambda item: (-item[0], item[1][0]))
    blob = orjson.dumps({"items": [item for _, item in items]})
    with sessions.begin() as db:
        stored = repository.config_by_index(db, index_id)
        if stored is None:
            return {"suggestions": 0}
        stored.built = blob
        stored.built_version = (stored.built_version or 0) + 1
        stored.built_count = len(items)
        stored.built_seq = seq
        stored.built_generation = generation
        stored.built_at = utcnow()
    return {"suggestions": len(items), "candidates": len(items) + dropped, "dropped": dropped}


def rebuild_task(ctx: TaskContext) -> None:
    counts = build(ctx.sessions, ctx.bridge, ctx.claim.index_id, checkpoint=lambda: ctx.checkpoint(force=True),
                   timeout_ms=float(ctx.settings.search_timeout_ms))
    ctx.claim.details.update(counts)
