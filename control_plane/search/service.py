"""Profile-based search, shared by the secret route (by index id) and the storefront (by profile key).

The hot path stays off the database: the storefront's profile and index are cached per process and
revalidated against the index epoch (``control_plane.state.epochs``) on every request; answers are
cached under the same epoch, so a change anywhere — documents applied, profile or facets edited,
a generation swapped — retires every cached answer of that index at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

import msgspec
import orjson
from anyio import to_thread
from sqlalchemy.orm import Session

from control_plane.access.caller import Principal
from control_plane.access.tenancy import project_access
from control_plane.index import repository as indices
from control_plane.index.models import Index
from control_plane.index.service import get_index, plan_limits_for_project
from control_plane.outages import unavailable_part
from control_plane.profile import repository as profiles
from control_plane.profile.service import parse_settings, settings_of
from control_plane.profile.validation import default_settings, validate_profile
from control_plane.rule.matching import NO_EFFECTS, Effects, RuleSet, effects_of
from control_plane.runtime import Runtime
from control_plane.search.cache import AnswerCache
from control_plane.search.facet_values import FacetValuesAsk, highlighted, typed_words
from control_plane.search.merchandising import search_with_pins, shaped_query
from control_plane.search.profile_query import SearchRequest, check_limits, engine_query, format_answer
from control_plane.search.semantic import semantic_of
from control_plane.search.state import Resolved
from control_plane.shard import search_serving
from control_plane.state import uncached_epoch
from shared.contract import Answer, Facet, Query, ShardSpec
from shared.errors import not_found
from shared.text import query_text


def start_search(runtime: Runtime) -> None:
    runtime.search.events.start()


def stop_search(runtime: Runtime) -> None:
    runtime.search.events.stop()


# --------------------------------------------------------------------------- resolving
def _searches_per_second(db: Session, project_id: str) -> int:
    return plan_limits_for_project(db, project_id).max_searches_per_second


def _load_profile(runtime: Runtime, profile_key: str, epoch: int | None) -> Resolved | None:
    """The handle's resolution; ``epoch`` is read before the settings (here if not given), so a
    change committed meanwhile is caught by the next request's epoch check."""
    if epoch is None:
        with runtime.sessions() as db:
            index_id = profiles.index_id_of_key(db, profile_key)
        if index_id is None:
            return None
        epoch = runtime.epochs.current(index_id)
    with runtime.sessions() as db:
        profile = profiles.by_key(db, profile_key)
        if profile is None:
            return None
        index = indices.detached_index(db, profile.index_id)
        if index is None:
            return None
        return Resolved(
            index=index,
            settings=settings_of(profile),
            profile_id=profile.id,
            profile_version=profile.updated_at.isoformat(),
            epoch=epoch,
            searches_per_second=_searches_per_second(db, index.project_id),
            merch=runtime.search.merch.of(db, index),
        )


async def resolve_storefront(runtime: Runtime, profile_key: str) -> Resolved:
    """The profile behind a storefront handle (404 when unknown), cached until its index's epoch moves."""
    state = runtime.search
    cached = state.storefront.get(profile_key)
    epoch = None
    if cached is not None:
        epoch = runtime.epochs.current(cached.index.id)
        if epoch == cached.epoch:
            return cached
    try:
        loaded = await to_thread.run_sync(partial(_load_profile, runtime, profile_key, epoch))
    except Exception as exc:
        if cached is None or unavailable_part(exc) != "database":
            raise
        # the database is down and the index changed since: the last resolution still describes
        # the profile (no change to it can be made meanwhile); not kept, the next request reads again
        return replace(cached, epoch=cached.epoch if epoch is None else epoch)
    if loaded is None:
        raise not_found("Search profile")
    state.storefront.put(profile_key, loaded)
    return loaded


def _secret_cache_key(index_id: str, body: SearchRequest) -> tuple[str, str | None] | None:
    """Saved-profile and default searches are cached per index; inline profiles are re-validated."""
    if body.profile is not None:
        return None
    return (index_id, body.profile_key)


def cached_for_key(runtime: Runtime, principal: Principal, project_id: str, index_id: str,
                   body: SearchRequest, *, any_epoch: bool = False) -> Resolved | None:
    """The secret route's resolution without the database: a secret key of this project (and of
    this index, when scoped) asking what was resolved at the index's current epoch.

    Anything else (signed-in users, other projects, first searches, inline profiles) returns None
    and goes through :func:`resolve_secret`, which applies every access rule."""
    if principal.kind != "secret_key" or principal.key is None or principal.key.project_id != project_id:
        return None
    if principal.key.index_id not in (None, index_id):
        return None
    key = _secret_cache_key(index_id, body)
    cached = runtime.search.secret.get(key) if key is not None else None
    if cached is None or cached.project_id != project_id:
        return None
    if any_epoch:  # the database is down: the last resolution, under the index's current epoch
        return replace(cached, epoch=runtime.epochs.current(index_id))
    return cached if cached.epoch == runtime.epochs.current(index_id) else None


def resolve_secret(runtime: Runtime, principal: Principal, project_id: str, index_id: str,
                   body: SearchRequest) -> Resolved:
    """Access rules (label "index read") and resolution through the database (thread pool)."""
    with runtime.sessions() as db:
        access = project_access(db, principal, project_id, write=False)
        epoch = runtime.epochs.current(index_id)  # before reading: a change after it re-resolves
        resolved = resolve_for_index(runtime, db, get_index(db, access, index_id), body)
    resolved = replace(resolved, epoch=epoch)
    key = _secret_cache_key(index_id, body)
    if key is not None:
        runtime.search.secret.put(key, resolved)
    return resolved


def resolve_for_index(runtime: Runtime, db: Session, index: Index, body: SearchRequest) -> Resolved:
    """Settings for the secret route: a saved profile of this index, an inline one, or the defaults."""
    mapping = index.serving_mapping or index.mapping
    profile_id: str | None = None
    version = "default"
    if body.profile_key is not None:
        profile = profiles.by_key(db, body.profile_key, index_id=index.id)
        if profile is None:
            raise not_found("Search profile")
        settings = settings_of(profile)
        profile_id, version = profile.id, profile.updated_at.isoformat()
    elif body.profile is not None:
        settings = parse_settings(body.profile)
        validate_profile(settings, mapping)
        version = "inline:" + orjson.dumps(settings.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS).decode()
    else:
        settings = default_settings(mapping, list(index.facets or []))
    epoch = runtime.epochs.current(index.id)
    searches_per_second = _searches_per_second(db, index.project_id)
    merch = runtime.search.merch.of(db, index)
    db.expunge(index)
    return Resolved(index=index, settings=settings, profile_id=profile_id, profile_version=version, epoch=epoch,
                    searches_per_second=searches_per_second, merch=merch)


# --------------------------------------------------------------------------- searching
async def _serving_spec(runtime: Runtime, index_id: str) -> ShardSpec | None:
    """The index's serving generation read again (a search ran into a swap)."""

    def read() -> ShardSpec | None:
        with runtime.sessions() as db:
            index = indices.index_by_id(db, index_id)
            return None if index is None else index.shard_spec()

    return await asyncio.to_thread(read)


def _hit_ids(answer: dict[str, Any]) -> list[str]:
    return [str(hit.get("id")) for hit in answer.get("hits") or ()]


def _tail(query_id: str, took_ms: float) -> bytes:
    return b',"queryId":' + orjson.dumps(query_id) + b',"tookMs":' + orjson.dumps(round(took_ms, 3)) + b"}"


def rule_effects(resolved: Resolved, body: SearchRequest, rules: RuleSet | None = None) -> Effects:
    """What the index's rules (or ``rules``) do to this search; nothing when the profile turns them off."""
    rule_set = resolved.merch.rules if rules is None else rules
    if not resolved.settings.rules or not len(rule_set):
        return NO_EFFECTS
    return effects_of(rule_set.applying(body.q, body.filters))


async def compute_answer(runtime: Runtime, resolved: Resolved, body: SearchRequest, effects: Effects,
                         facets: tuple[Facet, ...] | None = None) -> dict[str, Any]:
    """The answer (without queryId and tookMs) searched on the shards, synonyms and rules applied;
    ``facets``: counted instead of the request's (a facet value search)."""
    index, settings = resolved.index, resolved.settings
    mapping = index.serving_mapping or index.mapping
    q = effects.replace_query if effects.replace_query is not None else body.q
    typo = settings.typo_tolerance
    synonyms = (resolved.merch.synonyms.for_query(q, typo=typo.enabled, min_one_typo=typo.min_word_size_one_typo,
                                                  min_two_typos=typo.min_word_size_two_typos)
                if settings.synonyms else None)
    query, facts = engine_query(settings, body, list(index.facets or []), mapping,
                                timeout_ms=runtime.settings.search_timeout_ms)
    query = shaped_query(query, effects, q, synonyms)
    semantic = await semantic_of(runtime, resolved, body, q)
    if semantic is not None:  # similarTo's document is no answer to itself
        similar = () if body.similar_to is None else (body.similar_to,)
        query = msgspec.structs.replace(query, semantic=semantic, exclude_ids=(*query.exclude_ids, *similar))
    if facets is not None:
        query = msgspec.structs.replace(query, facets=facets)
        facts = replace(facts, facets=facets)

    async def run(one: Query) -> Answer:
        return await search_serving(runtime.shard_bridge(), index.shard_spec(), one,
                                    lambda: _serving_spec(runtime, index.id))

    pinned: set[str] = set()
    if effects.pins:
        result, pinned = await search_with_pins(run, query, effects.pins)
    else:
        result = await run(query)
    answer = format_answer(result, facts)
    if pinned:
        for hit in answer["hits"]:
            if hit["id"] in pinned:
                hit["pinned"] = True
    answer["appliedRules"] = effects.applied
    if effects.redirect is not None:
        answer["redirect"] = effects.redirect
    if effects.user_data:
        answer["userData"] = effects.user_data
    return answer


def prepare(resolved: Resolved, body: SearchRequest) -> tuple[SearchRequest, Effects, bytes]:
    """The request in the one form that everything after receives, what the rules do to it, and its
    answer-cache key, made of exactly what decides the answer: two requests with one key always get
    one answer, so no spelling of a query can cache an answer for another."""
    settings = resolved.settings
    option = body.sort or settings.default_sort
    measures = any(item.endswith(":near") for o in settings.sort_options if o.key == option for item in o.sort)
    # a point nothing measures from decides nothing: a shop that always sends the shopper's location
    # shares its answers for every other sort
    body = body.model_copy(update={"q": query_text(body.q), **({} if measures else {"near": None})})
    normalized = body.model_dump(mode="json", exclude={"user_token", "profile_key", "profile"}, exclude_none=True)
    # the applied rules are part of the key: a rule whose validity window opens changes the answer
    effects = rule_effects(resolved, body)
    index = resolved.index
    key = AnswerCache.key(index.id, resolved.epoch, index.serving_generation, resolved.profile_id,
                          resolved.profile_version, normalized, effects.applied)
    return body, effects, key


async def run_search(
    runtime: Runtime,
    resolved: Resolved,
    body: SearchRequest,
    *,
    source: str,
    use_cache: bool = True,
    client: str = "",
) -> bytes:
    """The answer's JSON: from the answer cache, or searched and cached under the index epoch."""
    started = time.perf_counter()
    check_limits(resolved.settings, body)  # before anything reads the body (a 300-deep filter broke model_dump)
    # the endpoint has counted this search against its caller's quota (control_plane.search.quota)
    state = runtime.search
    index = resolved.index
    typed = body.q
    body, effects, key = prepare(resolved, body)
    cacheable = not uncached_epoch(resolved.epoch)  # Redis unreachable: the epoch is unknown
    hit = state.answers.get(key) if use_cache and cacheable else None
    cached = hit is not None
    if hit is not None:
        head, total = hit
        hit_ids = _hit_ids(orjson.loads(head + b"}"))
    else:
        answer = await compute_answer(runtime, resolved, body, effects)
        head = orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY)[:-1]
        total = answer["total"]
        hit_ids = _hit_ids(answer)
        if cacheable:
            state.answers.put(key, head, total)
    # the id names the hits returned: a click or conversion is accepted for those only (events)
    query_id = runtime.query_ids.make(index.id, datetime.now(UTC).date(), body.q.strip(), hit_ids)
    took_ms = (time.perf_counter() - started) * 1000
    if resolved.settings.analytics and body.page_size(resolved.settings) > 0:  # perPage 0: a widget's counts
        state.events.emit(
            {
                "type": "search",
                "queryId": query_id,
                "projectId": index.project_id,
                "indexId": index.id,
                "profileId": resolved.profile_id,
                "q": typed,
                "filters": body.filters,
                "page": body.page,
                "total": total,
                "userToken": body.user_token,
                "client": client,  # who searched, for popular queries' distinct clients (door.service)
                "source": source,
                "cached": cached,
                "tookMs": took_ms,
                "at": datetime.now(UTC).isoformat(),
            }
        )
    return head + _tail(query_id, took_ms)


async def run_facet_values(runtime: Runtime, resolved: Resolved, body: SearchRequest, ask: FacetValuesAsk, *,
                           use_cache: bool = True) -> bytes:
    """A facet value search's JSON: ``ask.field``'s values matching ``ask.q``, counted over the
    search ``body`` (its filter on the field left out), cached like answers."""
    started = time.perf_counter()
    body, effects, key = prepare(resolved, body.model_copy(update={"per_page": 0, "facets": [ask.field]}))
    words = typed_words(ask.q)
    key = AnswerCache.key(key.hex(), "facet-values", ask.field, words, ask.limit)
    state = runtime.search
    cacheable = not uncached_epoch(resolved.epoch)
    hit = state.answers.get(key) if cacheable and use_cache else None
    if hit is not None:
        head = hit[0]
    else:
        facet = Facet(ask.field, type="values", prefix=" ".join(words), size=ask.limit)
        answer = await compute_answer(runtime, resolved, body, effects, facets=(facet,))
        values = [{"value": v["value"], "highlighted": highlighted(str(v["value"]), words), "count": v["count"]}
                  for v in answer["facets"].get(ask.field, [])]
        head = orjson.dumps({"values": values})[:-1]
        if cacheable:
            state.answers.put(key, head, len(values))
    took_ms = (time.perf_counter() - started) * 1000
    return head + b',"tookMs":' + orjson.dumps(round(took_ms, 3)) + b"}"
