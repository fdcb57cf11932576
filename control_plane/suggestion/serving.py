"""Answering suggest from memory: each serving process keeps every index's built suggestions.

An index's suggestions are loaded from the database when first asked for and checked against the
index epoch on every request (one shared-state read, as search does). When the epoch moved, the
settings row is read again; the built suggestions are reloaded (and the in-memory index rebuilt)
only when a rebuild landed or the settings or custom suggestions changed. Answers are cached in
the search answer cache under the same epoch.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

import orjson
from anyio import to_thread

from control_plane.access.caller import Principal
from control_plane.access.storefront import refuse_session
from control_plane.index import repository as indices
from control_plane.index.service import plan_limits_for_project
from control_plane.profile.validation import default_settings as default_profile
from control_plane.runtime import Runtime
from control_plane.search.cache import AnswerCache
from control_plane.search.profile_query import SearchRequest
from control_plane.search.service import resolve_storefront, run_search
from control_plane.search.state import Resolved
from control_plane.state import uncached_epoch
from control_plane.suggestion import repository
from control_plane.suggestion.matcher import Item, SuggestionIndex, words_of
from control_plane.suggestion.schemas import SuggestionSettings
from control_plane.suggestion.service import settings_of
from control_plane.suggestion.state import Loaded
from shared.errors import not_found
from shared.text import query_text

_EMPTY = SuggestionIndex([])


def matcher_from(built: bytes | None, settings: SuggestionSettings, custom_ids: set[str]) -> SuggestionIndex:
    """The in-memory index of the built suggestions, without what the current settings left out."""
    if not built:
        return _EMPTY
    enabled = {s.field for s in settings.sources if s.weight > 0}
    if settings.popular_queries.enabled:
        enabled.add("popular")
    enabled.add("custom")
    items: list[Item] = []
    for text, scored, custom_id, *norm in orjson.loads(built)["items"]:
        best: tuple[float, str] | None = None
        for source, score in scored:
            if source not in enabled or (source == "custom" and custom_id not in custom_ids):
                continue
            if best is None or score > best[0]:
                best = (score, source)
        if best is not None:
            items.append(Item(text, best[0], best[1], norm[0] if norm else None))
    return SuggestionIndex(items)


def _load(runtime: Runtime, index_id: str, epoch: int, previous: Loaded | None) -> Loaded | None:
    """The index's suggestions at ``epoch`` (read before this), reusing ``previous``'s matcher when
    nothing it was built from changed. None when the index is gone."""
    with runtime.sessions() as db:
        row = repository.config_by_index(db, index_id)
        if row is None:
            index = indices.index_by_id(db, index_id)
            if index is None:
                return None
            return Loaded(index_id, index.project_id, None, SuggestionSettings(enabled=False), _EMPTY, (-1,), epoch,
                          plan_limits_for_project(db, index.project_id).max_searches_per_second)
        settings = settings_of(row)
        custom_ids = set(repository.custom_ids(db, index_id))
        version = (row.built_version, orjson.dumps(row.settings, option=orjson.OPT_SORT_KEYS), tuple(sorted(custom_ids)))
        if previous is not None and previous.version == version:
            matcher = previous.matcher
        else:
            matcher = matcher_from(repository.built_of(db, index_id), settings, custom_ids)
        return Loaded(index_id, row.project_id, row.suggest_key, settings, matcher, version, epoch,
                      plan_limits_for_project(db, row.project_id).max_searches_per_second)


def _load_locked(runtime: Runtime, index_id: str, force: bool = False) -> Loaded | None:
    """One load per index at a time. Meanwhile the others answer from the suggestions loaded
    before (a rebuild of 100k suggestions takes a second or two to load), or wait for the first."""
    state = runtime.suggestions
    lock = state.index_lock(index_id)
    current = state.by_index.get(index_id)
    if current is not None and not force and not lock.acquire(blocking=False):
        return current
    if current is None or force:
        lock.acquire()
    try:
        epoch = runtime.epochs.current(index_id)
        current = state.by_index.get(index_id)
        if current is not None and current.epoch == epoch and not uncached_epoch(epoch) and not force:
            return current
        loaded = _load(runtime, index_id, epoch, None if force else current)
        if loaded is None:
            state.by_index.pop(index_id, None)
        else:
            state.by_index[index_id] = loaded
        return loaded
    finally:
        lock.release()


async def loaded_for_index(runtime: Runtime, index_id: str) -> Loaded:
    state = runtime.suggestions
    current = state.by_index.get(index_id)
    if current is not None and current.epoch == runtime.epochs.current(index_id):
        return current
    loaded = await to_thread.run_sync(_load_locked, runtime, index_id)
    if loaded is None:
        raise not_found("Index")
    return loaded


def _index_of_key(runtime: Runtime, suggest_key: str) -> str | None:
    with runtime.sessions() as db:
        return repository.index_id_of_key(db, suggest_key)


async def loaded_for_key(runtime: Runtime, suggest_key: str) -> Loaded:
    """The suggestions behind a storefront handle (404 when unknown)."""
    state = runtime.suggestions
    index_id = state.key_to_index.get(suggest_key)
    if index_id is None:
        index_id = await to_thread.run_sync(_index_of_key, runtime, suggest_key)
        if index_id is None:
            raise not_found("Suggest handle")
        if len(state.key_to_index) > 50_000:
            state.key_to_index.clear()
        state.key_to_index[suggest_key] = index_id
    loaded: Loaded | None
    try:
        loaded = await loaded_for_index(runtime, index_id)
    except Exception:
        state.key_to_index.pop(suggest_key, None)
        raise
    if loaded.suggest_key != suggest_key:
        # loaded before the settings row existed (it is made on first use, which moves no epoch)
        loaded = await to_thread.run_sync(partial(_load_locked, runtime, index_id, force=True))
    if loaded is None or loaded.suggest_key != suggest_key:
        state.key_to_index.pop(suggest_key, None)
        raise not_found("Suggest handle")
    return loaded


# --------------------------------------------------------------------------- answering
async def _products(runtime: Runtime, loaded: Loaded, q: str, source: str) -> list[Any]:
    """The products profile's hits for ``q`` (its analytics off: a keystroke is not a search)."""
    products = loaded.settings.products
    resolved: Resolved | None
    if products.profile_key is not None:
        resolved = await resolve_storefront(runtime, products.profile_key)
    else:
        state = runtime.suggestions
        resolved = state.default_products.get(loaded.index_id)
        if resolved is None or resolved.epoch != loaded.epoch:
            resolved = await to_thread.run_sync(_default_resolution, runtime, loaded)
            if resolved is not None:
                state.default_products[loaded.index_id] = resolved
    if resolved is None or resolved.index.id != loaded.index_id:
        return []
    resolved = replace(resolved, settings=resolved.settings.model_copy(update={"analytics": False}))
    answer = await run_search(runtime, resolved, SearchRequest(q=q, per_page=products.count, facets=[]),
                              source=source)
    return list(orjson.loads(answer)["hits"])


def _default_resolution(runtime: Runtime, loaded: Loaded) -> Resolved | None:
    """Products searched with the default settings when the config names no profile: hits show
    only the fields the suggestions are made of and the mapping's first text field (its title);
    ``description``, ``popularity`` or a supplier field never leave through suggest unless a
    products profile retrieves them."""
    with runtime.sessions() as db:
        epoch = runtime.epochs.current(loaded.index_id)
        index = indices.detached_index(db, loaded.index_id)
        if index is None:
            return None
        mapping = index.serving_mapping or index.mapping
        fields = mapping.get("fields") or {}
        title = next((name for name, spec in fields.items() if spec.get("type") == "text"), None)  # the first text
        shown = sorted({name for name in [*(s.field for s in loaded.settings.sources), *([title] if title else [])]
                        if name in fields and fields[name].get("retrievable", True)})
        settings = default_profile(mapping, []).model_copy(update={"retrieve": shown})
        return Resolved(index=index, settings=settings, profile_id=None,
                        profile_version="suggest-default:" + ",".join(shown), epoch=epoch, searches_per_second=0)


async def suggest(runtime: Runtime, loaded: Loaded, q: str, limit: int | None, *, source: str) -> bytes:
    """The answer's JSON: from the answer cache or the in-memory index; records a ``suggest`` event."""
    started = time.perf_counter()
    settings = loaded.settings
    want = min(limit or settings.max_suggestions, settings.max_suggestions)
    state = runtime.search
    # one form of the text for the matcher, the products and the key (see run_search); the matcher
    # reads only the words, the products search also whether the last word is complete
    typed, q = q, query_text(q)
    words = words_of(q)
    products = settings.enabled and settings.products.enabled and bool(words)
    key = AnswerCache.key("suggest", loaded.index_id, loaded.epoch, loaded.version[0],
                          q if products else " ".join(words), want)
    cacheable = not uncached_epoch(loaded.epoch)
    hit = state.answers.get(key) if cacheable else None
    if hit is not None:
        head, total = hit
    else:
        suggestions: list[dict[str, str]] = []
        if settings.enabled:
            matcher = loaded.matcher
            for match in matcher.match(q, want, settings.typo_tolerance):
                item = matcher.items[match.item]
                suggestions.append({"text": item.text, "highlighted": matcher.highlight(match), "source": item.source})
        answer: dict[str, Any] = {"suggestions": suggestions}
        if products:
            answer["products"] = await _products(runtime, loaded, q, source)
        head = orjson.dumps(answer)[:-1]
        total = len(suggestions)
        if cacheable:
            state.answers.put(key, head, total)
    state.events.emit({
        "type": "suggest", "projectId": loaded.project_id, "indexId": loaded.index_id, "q": typed, "total": total,
        "source": source, "at": datetime.now(UTC).isoformat(),
    })
    took_ms = (time.perf_counter() - started) * 1000
    return head + b',"tookMs":' + orjson.dumps(round(took_ms, 3)) + b"}"


def forget(runtime: Runtime, index_id: str) -> None:
    """Drop an index's loaded suggestions in this process (the next request loads them again)."""
    runtime.suggestions.by_index.pop(index_id, None)


__all__ = ["Loaded", "forget", "loaded_for_index", "loaded_for_key", "matcher_from", "refuse_user", "suggest"]


def refuse_user(runtime: Runtime, principal: Principal, suggest_key: str) -> None:
    """A signed-in session never calls storefront suggest: 403, or 404 when the handle is not of
    one of its organizations (as storefront search does for profile handles)."""
    refuse_session(runtime, None, principal, lambda db: repository.project_of_suggest_key(db, suggest_key),
                   "Suggest handle")
