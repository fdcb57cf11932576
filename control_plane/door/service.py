"""The one search door: every route that searches enters here, and nowhere else.

Each function runs the same sequence for its kind of caller, so a search behaves alike on every
route (storefront, multi-search, facet values, secret, MCP, rules/test, suggest) — outages included:

1. **resolve** the profile (storefront handle, or the index's saved/inline/default settings), from
   the per-process cache when the index's epoch has not moved; during a database outage the last
   resolution keeps answering;
2. **authorize**: the key's project (and index, for an index-scoped key) owns what was resolved,
   else 404 — a handle of another tenant is "not found", never "forbidden";
3. **limits**: the request's size (``shared.limits``) and, for a public key, what the profile
   exposes (``search.exposure``), both 400 before any work or quota is spent;
4. **quota**: one search counted against the caller's bucket (429 past it);
5. **run** and **record**: answered from the answer cache or the shards, the analytics event
   emitted off the request path (``search.service.run_search``).

Endpoints only turn HTTP into a :class:`Caller` and a body and call one function here.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from anyio import to_thread

from control_plane.access.caller import Principal
from control_plane.index.service import get_index
from control_plane.outages import unavailable_part
from control_plane.rule import repository as rules_repository
from control_plane.rule import service as rules_service
from control_plane.rule.matching import RuleSet, compile_rule, effects_of
from control_plane.rule.schemas import RuleTest
from control_plane.runtime import Runtime
from control_plane.search.exposure import allowed_fields, check_public_request
from control_plane.search.facet_values import FacetValuesAsk, FacetValuesRequest
from control_plane.search.profile_query import MultiQuery, SearchRequest, check_limits
from control_plane.search.quota import charge_search
from control_plane.search.service import (
    cached_for_key,
    compute_answer,
    resolve_for_index,
    resolve_secret,
    resolve_storefront,
    run_facet_values,
    run_search,
)
from control_plane.search.state import Resolved
from control_plane.suggestion.schemas import SuggestRequest
from control_plane.suggestion.serving import loaded_for_index, loaded_for_key, suggest
from control_plane.suggestion.state import Loaded
from shared.errors import ErrorCode, ServiceError, not_found


@dataclass(frozen=True)
class Caller:
    """Who searches, from where, and whether they asked for an answer computed now."""

    principal: Principal
    client_ip: str
    #: ``Cache-Control: no-cache`` from a secret key (a public key may not bypass the cache: uncached
    #: searches are what a flood from a shop's pages would need to load the shards)
    fresh: bool = False

    @classmethod
    def of(cls, principal: Principal, client_ip: str, cache_control: str | None = None) -> Caller:
        fresh = principal.kind == "secret_key" and "no-cache" in (cache_control or "").lower()
        return cls(principal, client_ip, fresh)


# --------------------------------------------------------------------------- authorize
def _authorize(principal: Principal, project_id: str, index_id: str, what: str) -> None:
    """404 unless the caller's key belongs to the project (and index) that owns the handle."""
    key = principal.key
    if key is None or key.project_id != project_id or key.index_id not in (None, index_id):
        raise not_found(what)


# --------------------------------------------------------------------------- resolve
async def _storefront(runtime: Runtime, principal: Principal, profile_key: str) -> Resolved:
    resolved = await resolve_storefront(runtime, profile_key)
    _authorize(principal, resolved.project_id, resolved.index.id, "Search profile")
    return resolved


async def _secret(runtime: Runtime, principal: Principal, project_id: str, index_id: str,
                  body: SearchRequest) -> Resolved:
    """The index's settings for a member or secret key; access rules applied on a cache miss."""
    resolved = cached_for_key(runtime, principal, project_id, index_id, body)
    if resolved is not None:
        return resolved
    try:
        return await to_thread.run_sync(resolve_secret, runtime, principal, project_id, index_id, body)
    except Exception as exc:
        # the database is down and the index changed since this key's last search here: its last
        # resolution (access already checked by the key's project and scope) keeps it answering
        stale = cached_for_key(runtime, principal, project_id, index_id, body, any_epoch=True)
        if stale is None or unavailable_part(exc) != "database":
            raise
        return stale


# --------------------------------------------------------------------------- limits, quota, run
def _check(caller: Caller, resolved: Resolved, body: SearchRequest) -> None:
    check_limits(resolved.settings, body)
    if caller.principal.kind == "public_key":
        index = resolved.index
        check_public_request(resolved.settings, body, index.serving_mapping or index.mapping)


def _charge(runtime: Runtime, caller: Caller, project_id: str, searches_per_second: int) -> None:
    charge_search(runtime, project_id, searches_per_second, caller.principal, caller.client_ip)


def _check_facet_field(caller: Caller, resolved: Resolved, field: str) -> None:
    """A facet value search asks a keyword facet; a public key only one the profile exposes."""
    mapping = resolved.index.serving_mapping or resolved.index.mapping
    spec = (mapping.get("fields") or {}).get(field) or {}
    if not spec.get("facetable") or spec.get("type") not in ("keyword", "keyword[]"):
        raise ServiceError(ErrorCode.VALIDATION_ERROR, "Facet value search needs a facetable keyword field",
                           [{"path": "field", "message": f"{field}: not a facetable keyword field"}])
    if caller.principal.kind == "public_key" and field not in allowed_fields(resolved.settings, mapping)[1]:
        raise ServiceError(ErrorCode.VALIDATION_ERROR, "The search uses fields this profile does not expose",
                           [{"path": "field", "message": f"{field}: the profile does not facet on this field"}])


def _client(caller: Caller, body: SearchRequest) -> str:
    """Who searched, as popular queries count distinct clients: a secret key's caller (the shop's
    backend, searching for its shoppers) is believed on its ``userToken``; anyone else could send any
    token, so a public key's (and a token-less) search counts by address — an IPv6 address by its
    /64, the block one subscriber is given."""
    if caller.principal.kind != "public_key" and body.user_token:
        return "user:" + body.user_token
    return _address_client(caller.client_ip)


@functools.lru_cache(maxsize=16_384)  # a shop's shoppers search again and again: parse each address once
def _address_client(client_ip: str) -> str:
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return "ip:" + client_ip
    if address.version == 6:
        return "ip:" + str(ipaddress.ip_network(f"{address}/64", strict=False))
    return f"ip:{address}"


async def _search(runtime: Runtime, caller: Caller, resolved: Resolved, body: SearchRequest, source: str) -> bytes:
    _check(caller, resolved, body)
    _charge(runtime, caller, resolved.project_id, resolved.searches_per_second)
    return await run_search(runtime, resolved, body, source=source, use_cache=not caller.fresh,
                            client=_client(caller, body))


# --------------------------------------------------------------------------- the routes' doors
def _no_profile_in_body(body: SearchRequest, where: str) -> None:
    if body.profile is not None or body.profile_key is not None:
        raise ServiceError(
            ErrorCode.VALIDATION_ERROR,
            f"The storefront takes its profile from {where}",
            [{"path": "profile" if body.profile is not None else "profileKey", "message": "not allowed here"}],
        )


async def storefront_search(runtime: Runtime, caller: Caller, profile_key: str, body: SearchRequest) -> bytes:
    """``POST /v1/search/{profileKey}``: the answer's JSON."""
    _no_profile_in_body(body, "the path")
    resolved = await _storefront(runtime, caller.principal, profile_key)
    return await _search(runtime, caller, resolved, body, "storefront")


@contextmanager
def _query(i: int) -> Iterator[None]:
    """A refusal of query ``i`` of a batch is the batch's, its paths under ``queries[i]``."""
    try:
        yield
    except ServiceError as exc:
        at = f"queries[{i}]"
        details = [{**d, "path": f"{at}.{d['path']}" if d.get("path") else at} for d in exc.details or ()]
        raise ServiceError(exc.code, exc.message, details or [{"path": at, "message": exc.message}],
                           exc.headers) from exc


async def _facet_values(runtime: Runtime, caller: Caller, resolved: Resolved, body: SearchRequest,
                        ask: FacetValuesAsk) -> bytes:
    _check_facet_field(caller, resolved, ask.field)
    _check(caller, resolved, body)
    _charge(runtime, caller, resolved.project_id, resolved.searches_per_second)
    return await run_facet_values(runtime, resolved, body, ask, use_cache=not caller.fresh)


async def storefront_facet_values(runtime: Runtime, caller: Caller, profile_key: str,
                                  request: FacetValuesRequest) -> bytes:
    """``POST /v1/search/{profileKey}/facet-values``: the answer's JSON."""
    body = SearchRequest(q=request.query, filters=request.filters, profile=request.profile,
                         profile_key=request.profile_key)
    _no_profile_in_body(body, "the path")
    resolved = await _storefront(runtime, caller.principal, profile_key)
    return await _facet_values(runtime, caller, resolved, body, request)


async def index_facet_values(runtime: Runtime, caller: Caller, project_id: str, index_id: str,
                             request: FacetValuesRequest) -> bytes:
    """``POST .../indices/{indexId}/facet-values``: a saved profile, an inline one or the defaults."""
    body = SearchRequest(q=request.query, filters=request.filters, profile=request.profile,
                         profile_key=request.profile_key)
    resolved = await _secret(runtime, caller.principal, project_id, index_id, body)
    return await _facet_values(runtime, caller, resolved, body, request)


async def multi_search(runtime: Runtime, caller: Caller, queries: list[MultiQuery]) -> bytes:
    """``POST /v1/multi-search``: a page's storefront searches in one round trip, answered in order.

    Every query is resolved, authorized and checked before any is counted or run, so a batch with
    one refused query costs no quota and no engine work; then each counts as one search."""
    planned: list[tuple[Resolved, SearchRequest]] = []
    for i, query in enumerate(queries):
        with _query(i):
            body = query.search_request()
            _no_profile_in_body(body, "each query's profileKey")
            resolved = await _storefront(runtime, caller.principal, query.profile_key)
            if query.facet_values is not None:
                _check_facet_field(caller, resolved, query.facet_values.field)
            _check(caller, resolved, body)
            planned.append((resolved, body))
    for i, (resolved, _) in enumerate(planned):
        with _query(i):
            _charge(runtime, caller, resolved.project_id, resolved.searches_per_second)

    async def run(i: int, resolved: Resolved, body: SearchRequest) -> bytes:
        with _query(i):
            ask = queries[i].facet_values
            if ask is not None:
                return await run_facet_values(runtime, resolved, body, ask, use_cache=not caller.fresh)
            return await run_search(runtime, resolved, body, source="storefront", use_cache=not caller.fresh,
                                    client=_client(caller, body))

    answers = await asyncio.gather(*(run(i, resolved, body) for i, (resolved, body) in enumerate(planned)))
    return b'{"results":[' + b",".join(answers) + b"]}"


async def index_search(runtime: Runtime, caller: Caller, project_id: str, index_id: str, body: SearchRequest,
                       *, source: str = "api") -> bytes:
    """The secret route (and MCP's search tool): a saved profile, an inline one or the defaults."""
    resolved = await _secret(runtime, caller.principal, project_id, index_id, body)
    return await _search(runtime, caller, resolved, body, source)


async def _suggest(runtime: Runtime, caller: Caller, loaded: Loaded, body: SuggestRequest, source: str) -> bytes:
    _charge(runtime, caller, loaded.project_id, loaded.searches_per_second)
    return await suggest(runtime, loaded, body.q, body.limit, source=source)


async def storefront_suggest(runtime: Runtime, caller: Caller, suggest_key: str, body: SuggestRequest) -> bytes:
    """``POST /v1/suggest/{suggestKey}``: the answer's JSON."""
    loaded = await loaded_for_key(runtime, suggest_key)
    _authorize(caller.principal, loaded.project_id, loaded.index_id, "Suggest handle")
    return await _suggest(runtime, caller, loaded, body, "storefront")


async def index_suggest(runtime: Runtime, caller: Caller, project_id: str, index_id: str, body: SuggestRequest,
                        *, source: str = "secret") -> bytes:
    """Suggest by index id (members, secret keys; MCP's suggest tool). The caller's access to the
    index was decided by the route's label (or the key's scope, for MCP)."""
    key = caller.principal.key
    if key is not None and key.index_id not in (None, index_id):
        raise not_found("Index")
    loaded = await loaded_for_index(runtime, index_id)
    if loaded.project_id != project_id:
        raise not_found("Index")
    return await _suggest(runtime, caller, loaded, body, source)


def _rules_setup(runtime: Runtime, access: Any, body: RuleTest) -> tuple[Resolved, RuleSet, SearchRequest]:
    """The index's settings, its saved rules and the draft (validated as a saved one would be)."""
    request = SearchRequest(q=body.q, filters=body.filters, page=body.page, per_page=body.per_page,
                            profile_key=body.profile_key)
    with runtime.sessions() as db:
        index = get_index(db, access, access.index_id)
        saved = rules_repository.all_for_index(db, index.id)
        draft = rules_service.checked(body.rule, index) if body.rule is not None else None
        resolved = resolve_for_index(runtime, db, index, request)
    # a draft with the id of a saved rule stands in for it (a merchant editing a rule previews the
    # hits without the saved version), at its place unless it names another
    replaced = next((r for r in saved if body.rule is not None and r.id == body.rule.id), None)
    compiled = [compile_rule(r.id, r.name, r.enabled, r.position, r.body) for r in saved if r is not replaced]
    if body.rule is not None and draft is not None:
        position = body.rule.position or (replaced.position if replaced is not None else None)
        at = min(position or len(compiled) + 1, len(compiled) + 1) - 1
        compiled.insert(at, compile_rule("draft", body.rule.name, body.rule.enabled, 0, draft))
    return resolved, RuleSet(replace(r, position=i) for i, r in enumerate(compiled, start=1)), request


async def rules_test(runtime: Runtime, caller: Caller, access: Any, body: RuleTest) -> dict[str, Any]:
    """``POST .../rules/test``: which rules a query triggers and the hits they give. A search like
    any other: the same limits and quota (its answer is never cached: the draft is not saved)."""
    resolved, rules, request = await to_thread.run_sync(_rules_setup, runtime, access, body)
    _check(caller, resolved, request)
    _charge(runtime, caller, resolved.project_id, resolved.searches_per_second)
    now = datetime.now(UTC)
    matched = rules.matching(body.q, body.filters)
    effects = effects_of([r for r in matched if r.active(now)])
    answer = await compute_answer(runtime, resolved, request, effects)
    return {
        "matchedRules": [{"id": r.id, "name": r.name, "enabled": r.enabled, "active": r.active(now)} for r in matched],
        "appliedRules": effects.applied,
        "hits": answer["hits"],
        "total": answer["total"],
        "redirect": answer.get("redirect"),
        "userData": answer.get("userData"),
    }
