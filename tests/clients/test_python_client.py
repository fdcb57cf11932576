"""Every method of the Python client once, against a real ``shopsearch serve`` on both backends
(SQLite; PostgreSQL + Redis), with ``Client`` and with ``AsyncClient``: the typed answers are checked
field by field, errors as ``ShopsearchError``.

The scenario is written once, as a coroutine: ``do()`` awaits what the async client returns and
passes the sync client's answers through, so both clients walk the same steps.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from shopsearch_client import (
    AsyncClient,
    Client,
    Index,
    Project,
    ReplaceSession,
    ShopsearchError,
    UploadProgress,
)
from shopsearch_client import models as m
from shopsearch_client._handles import Root

from tests.clients.conftest import FEED, MAPPING, ORIGIN, Shop

pytestmark = pytest.mark.long  # a server per backend, tens of seconds


async def do(value: Any) -> Any:
    """The answer of a call: awaited on the async client, as is on the sync one."""
    return await value if inspect.isawaitable(value) else value


async def collect(items: Any) -> list[Any]:
    if hasattr(items, "__aiter__"):
        return [item async for item in items]
    return list(items)


@contextlib.asynccontextmanager
async def scope(manager: Any) -> AsyncIterator[Any]:
    if hasattr(manager, "__aenter__"):
        async with manager as value:
            yield value
    else:
        with manager as value:
            yield value


async def fails(call: Any, status: int | None, code: str) -> ShopsearchError:
    with pytest.raises(ShopsearchError) as info:
        await do(call())
    error = info.value
    assert (error.status, error.code) == (status, code), repr(error)
    assert isinstance(error.message, str) and error.message
    assert isinstance(error.details, list)
    return error


def recent(value: datetime) -> None:
    assert value.tzinfo is not None and abs(datetime.now(UTC) - value) < timedelta(minutes=10), value


def product(i: int) -> dict[str, Any]:
    return {"id": str(i), "name": f"steel kettle {i}", "brand": "Acme" if i % 2 else "Zed", "price": float(i % 100)}


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_client(flavour: str, shop: Shop, key: str | None = None, **options: Any) -> Client | AsyncClient:
    cls = Client if flavour == "sync" else AsyncClient
    return cls(shop.base, shop.key if key is None else key, **options)


async def close(client: Client | AsyncClient) -> None:
    await do(client.aclose() if isinstance(client, AsyncClient) else client.close())


async def test_every_method(shop: Shop, flavour: str, feed_url: str) -> None:
    client = make_client(flavour, shop)
    storefront = make_client(flavour, shop, shop.public_key, headers={"Origin": ORIGIN})
    try:
        await scenario(client, storefront, shop, feed_url)
    finally:
        await close(client)
        await close(storefront)


async def scenario(client: Any, storefront: Any, shop: Shop, feed_url: str) -> None:
    # ------------------------------------------------------------------ status, project
    status = await do(client.status())
    assert isinstance(status, m.Status)
    assert status.status in ("operational", "degraded", "down")
    assert {s.name for s in status.services} == {"search", "indexing", "dashboard", "mcp"}
    recent(datetime.fromisoformat(status.checked_at))

    project = client.project(shop.project_id)
    assert isinstance(project, Project) and project.id == shop.project_id
    info = await do(project.get())
    assert isinstance(info, m.ProjectInfo)
    assert (info.id, info.name) == (shop.project_id, "bench") and info.org_id.startswith("org_")
    recent(info.created_at)

    # ------------------------------------------------------------------ indices
    created = await do(project.create_index("kettles", mapping=MAPPING, shards=2, replicas=1, language="en"))
    assert isinstance(created, m.IndexInfo)
    assert created.id.startswith("idx_") and created.name == "kettles" and created.project_id == shop.project_id
    assert (created.shards, created.replicas, created.language) == (2, 1, "en")
    assert (created.document_count, created.status, created.integration) == (0, "ready", None)
    recent(created.created_at)
    assert created.updated_at >= created.created_at
    index = project.index(created.id)
    assert isinstance(index, Index) and (index.project_id, index.id) == (shop.project_id, created.id)
    assert client.index(shop.project_id, created.id).id == created.id
    assert index.project.id == shop.project_id
    assert await do(index.get()) == created
    await fails(lambda: project.create_index("kettles"), 409, "CONFLICT")
    other = await do(project.create_index("spare"))
    page = await do(project.list_indices(limit=1))
    assert isinstance(page, m.Page) and len(page.items) == 1 and page.next_cursor
    assert isinstance(page.items[0], m.IndexInfo)
    rest = await do(project.list_indices(limit=1, cursor=page.next_cursor))
    assert {page.items[0].id, rest.items[0].id} <= {created.id, other.id}
    listed = await collect(project.iter_indices(page_size=1))
    assert [i.id for i in listed if i.id in (created.id, other.id)] == [page.items[0].id, rest.items[0].id]

    # ------------------------------------------------------------------ mapping, facets
    mapping = await do(index.get_mapping())
    assert mapping["idField"] == "id" and mapping["fields"]["name"]["type"] == "text"
    wider = {**MAPPING, "fields": {**MAPPING["fields"], "color": {"type": "keyword", "facetable": True}}}
    accepted = await do(index.update_mapping(wider))
    assert isinstance(accepted, m.TaskAccepted) and accepted.task_id.startswith("tsk_")
    task = await do(index.wait_for_task(accepted))
    assert isinstance(task, m.Task)
    assert (task.task_id, task.project_id, task.index_id) == (accepted.task_id, shop.project_id, created.id)
    assert (task.type, task.status, task.error) == ("mapping.update", "succeeded", None) and task.finished
    assert task.started_at is not None and task.finished_at is not None
    assert task.created_at <= task.started_at <= task.finished_at and isinstance(task.details, dict)
    assert "color" in (await do(index.get_mapping()))["fields"]
    facets = await do(index.update_facets([
        {"field": "brand", "type": "terms", "label": "Brand"},
        m.Model.model_validate({"field": "price", "type": "range", "label": "Price",
                                "ranges": [{"to": 50, "label": "cheap"}, {"from": 50, "label": "dear"}]}),
    ]))
    assert isinstance(facets, m.Facets) and [f["field"] for f in facets.facets] == ["brand", "price"]
    assert await do(index.get_facets()) == facets
    usage = await do(index.mapping_usage())
    assert isinstance(usage, m.MappingUsage)
    assert [(u.kind, u.path) for u in usage.fields["brand"]] == [("facet", "field")]

    # ------------------------------------------------------------------ documents
    progress: list[UploadProgress] = []
    tasks = await do(index.upload_documents((product(i) for i in range(2500)), on_progress=progress.append))
    assert [type(t) for t in tasks] == [m.TaskAccepted] * 3 and len({t.task_id for t in tasks}) == 3
    assert [(p.documents, p.batches, p.total) for p in progress] == [(1000, 1, None), (2000, 2, None),
                                                                     (2500, 3, None)]
    assert [p.task_id for p in progress] == [t.task_id for t in tasks]
    done = await do(index.wait_for_tasks(tasks))
    assert [(t.type, t.status, t.details["received"]) for t in done] == [("documents.upsert", "succeeded", n)
                                                                          for n in (1000, 1000, 500)]
    small: list[UploadProgress] = []
    more = await do(index.upload_documents([product(i) for i in range(2500, 2505)], batch_size=2,
                                           on_progress=small.append))
    assert len(more) == 3 and [(p.documents, p.total) for p in small] == [(2, 5), (4, 5), (5, 5)]
    await do(index.wait_for_tasks(more))
    assert (await do(index.get())).document_count == 2505
    assert await do(index.get_document("7")) == product(7)
    first = await do(index.list_documents(limit=10))
    assert isinstance(first, m.Page) and len(first.items) == 10 and first.next_cursor
    assert all(isinstance(d, dict) for d in first.items)
    every = await collect(index.iter_documents(page_size=1000))
    assert len(every) == 2505 and len({d["id"] for d in every}) == 2505
    deleted = await do(index.delete_documents(["0", 1, "nope"]))
    assert len(deleted) == 1
    gone = await do(index.wait_for_task(deleted[0]))
    assert (gone.type, gone.details["received"]) == ("documents.delete", 3)
    error = await fails(lambda: index.get_document("0"), 404, "NOT_FOUND")
    assert error.retry_after is None and error.task is None

    # ------------------------------------------------------------------ tasks
    assert (await do(project.get_task(gone.task_id))).task_id == gone.task_id
    assert (await do(index.get_task(gone))) == gone
    deletes = await do(index.list_tasks(type=["documents.delete"]))
    assert [t.task_id for t in deletes.items] == [gone.task_id] and deletes.next_cursor is None
    upserts = await do(project.list_tasks(type=["documents.upsert"], index_id=created.id, status=["succeeded"],
                                          limit=2))
    assert len(upserts.items) == 2 and upserts.next_cursor
    all_upserts = await collect(project.iter_tasks(index_id=created.id, type=["documents.upsert"], page_size=2))
    assert sorted(t.task_id for t in all_upserts) == sorted(t.task_id for t in tasks + more)
    assert len(await collect(index.iter_tasks(status=["succeeded"]))) == 8  # mapping, 6 uploads, delete
    waited = await do(project.wait_for_tasks([t.task_id for t in tasks], timeout=30))
    assert [t.status for t in waited] == ["succeeded"] * 3
    assert (await do(project.wait_for_task(tasks[0], timeout=5))).task_id == tasks[0].task_id
    await fails(lambda: project.get_task("tsk_nope"), 404, "NOT_FOUND")

    # ------------------------------------------------------------------ profiles and search
    profile = await do(index.create_profile({
        "name": "storefront", "queryFields": {"name": {"weight": 5}, "brand": {"weight": 2, "typo": False}},
        "facets": ["brand", "price"], "perPage": 5,
        "sortOptions": [{"key": "cheap", "label": "Cheapest", "sort": ["price:asc"]}],
    }))
    assert isinstance(profile, m.Profile)
    assert profile.id.startswith("prf_") or profile.id
    assert (profile.name, profile.index_id, profile.per_page, profile.operator) == ("storefront", created.id, 5, "and")
    assert profile.query_fields["name"] == m.QueryField(weight=5, typo=True, prefix=True)
    assert profile.query_fields["brand"].typo is False
    assert profile.sort_options == [m.SortOption(key="cheap", label="Cheapest", sort=["price:asc"])]
    assert profile.typo_tolerance == m.TypoTolerance()
    assert (profile.synonyms, profile.rules, profile.analytics, profile.distinct) == (True, True, True, None)
    assert profile.profile_key and profile.created_at and profile.updated_at
    assert await do(index.get_profile(profile.id)) == profile
    changed = await do(index.update_profile(profile.id, profile.model_copy(update={"per_page": 4})))
    assert changed.per_page == 4 and changed.profile_key == profile.profile_key
    await fails(lambda: index.create_profile({"name": "bad", "queryFields": {"nope": {}}}), 400, "PROFILE_INVALID")
    bad = await fails(lambda: index.create_profile({"name": "bad", "queryFields": {"nope": {}}}), 400,
                      "PROFILE_INVALID")
    assert [d["path"] for d in bad.details] == ["queryFields.nope"]
    spare = await do(index.create_profile({"name": "spare", "queryFields": {"name": {}}}))
    assert {p.id for p in (await do(index.list_profiles())).items} == {profile.id, spare.id}
    assert sorted(p.id for p in await collect(index.iter_profiles(page_size=1))) == sorted([profile.id, spare.id])
    assert await do(index.delete_profile(spare.id)) is None
    await fails(lambda: index.get_profile(spare.id), 404, "NOT_FOUND")

    answer = await do(index.search("kettle", profile_key=profile.profile_key, filters={"brand": ["Acme"]},
                                   sort="cheap", page=2, user_token="u1"))
    assert isinstance(answer, m.SearchAnswer)
    assert (answer.total, answer.page, answer.per_page, answer.sort) == (1251, 2, 4, "cheap")
    assert len(answer.hits) == 4 and all(isinstance(h, m.Hit) for h in answer.hits)
    hit = answer.hits[0]
    assert hit.document is not None and hit.document["brand"] == "Acme" and hit.id == hit.document["id"]
    assert isinstance(hit.highlights, dict) and hit.group_size is None
    assert [h.document["price"] for h in answer.hits if h.document] == sorted(
        h.document["price"] for h in answer.hits if h.document)
    brands = answer.facets["brand"]  # disjunctive: the brand filter is left out of its own counts
    assert {(b.value, b.count) for b in brands if isinstance(b, m.TermCount)} == {("Acme", 1251), ("Zed", 1252)}
    ranges = answer.facets["price"]
    assert [(r.from_, r.to, r.label) for r in ranges if isinstance(r, m.RangeCount)] == [
        (None, 50.0, "cheap"), (50.0, None, "dear")]
    assert sum(r.count for r in ranges) == 1251
    assert answer.applied_rules == [] and answer.query_id and answer.took_ms >= 0
    inline = await do(index.search("kettle 7", profile={"queryFields": {"name": {}}, "operator": "and"},
                                   facets=["brand"], per_page=3))
    assert inline.per_page == 3 and inline.hits[0].id == "7" and inline.sort is None
    await fails(lambda: index.search("x", profile={"queryFields": {"nope": {}}}), 400, "PROFILE_INVALID")
    public = await do(storefront.search(profile.profile_key, "kettle", filters={"price": {"lt": 10}}, per_page=2,
                                        page=1, sort="cheap", facets=["brand"], user_token="u2"))
    assert isinstance(public, m.SearchAnswer) and public.total == 253 and len(public.hits) == 2
    assert public.hits[0].document is not None and public.hits[0].document["price"] == 0.0
    secret_storefront = await do(client.search(profile.profile_key, "kettle"))
    assert secret_storefront.total == 2503
    await fails(lambda: storefront.search("pk_nope", "x"), 404, "NOT_FOUND")
    invalid = await fails(lambda: index.search("x", page=0), 400, "VALIDATION_ERROR")
    assert [d["path"] for d in invalid.details] == ["page"]
    values = await do(storefront.facet_values(profile.profile_key, "brand", "ac", query="kettle", limit=5))
    assert isinstance(values, m.FacetValuesAnswer)
    assert [(v.value, v.highlighted, v.count) for v in values.values] == [("Acme", "<em>Ac</em>me", 1251)]
    secret_values = await do(index.facet_values("brand", "z", profile_key=profile.profile_key,
                                                filters={"brand": "Acme"}))
    assert [(v.value, v.count) for v in secret_values.values] == [("Zed", 1252)]  # its own filter left out
    batch = await do(storefront.multi_search([
        {"profileKey": profile.profile_key, "q": "kettle", "perPage": 0, "facets": ["brand"]},
        {"profileKey": profile.profile_key, "q": "kettle", "facetValues": {"field": "brand", "q": "ze"}}]))
    assert isinstance(batch, m.MultiSearchAnswer) and isinstance(batch.results[0], m.SearchAnswer)
    assert batch.results[0].total == 2503 and batch.results[0].hits == []
    assert isinstance(batch.results[1], m.FacetValuesAnswer) and batch.results[1].values[0].value == "Zed"
    await fails(lambda: storefront.multi_search([{"profileKey": "pk_nope"}]), 404, "NOT_FOUND")

    # ------------------------------------------------------------------ events, analytics
    events = await do(storefront.send_events([
        m.Event(type="click", query_id=public.query_id, document_id=public.hits[0].id, position=1),
        {"type": "conversion", "queryId": public.query_id, "documentId": public.hits[0].id},
    ]))
    assert isinstance(events, m.EventsAccepted) and events.accepted == 2
    analytics = await analytics_after(index, searches=4)
    assert isinstance(analytics, m.Analytics)
    assert (analytics.from_, analytics.to, analytics.interval) == (
        (date.today() - timedelta(days=1)).isoformat(), date.today().isoformat(), "day")
    totals = analytics.totals
    assert totals.searches == 4 and totals.no_result_searches == 0 and totals.no_result_rate == 0
    assert (totals.clicks, totals.conversions) == (1, 1) and totals.average_click_position == 1.0
    assert totals.suggests == 0 and 0 < totals.click_through_rate <= 1 and 0 < totals.conversion_rate <= 1
    assert [(q.query, q.count) for q in analytics.top_queries if q.query == "kettle"] == [("kettle", 3)]
    assert all(isinstance(q, m.TopQuery) and q.avg_hits >= 0 for q in analytics.top_queries)
    assert analytics.no_result_queries == []
    assert [(c.document_id, c.clicks, c.conversions) for c in analytics.top_clicked] == [(public.hits[0].id, 1, 1)]
    assert [p.date for p in analytics.series] == [analytics.from_, analytics.to]
    assert sum(p.searches for p in analytics.series) == totals.searches

    # ------------------------------------------------------------------ synonyms
    multi = await do(index.create_synonym({"type": "multiway", "terms": ["kettle", "boiler"]}))
    assert isinstance(multi, m.Synonym)
    assert (multi.type, multi.terms, multi.input, multi.synonyms, multi.enabled) == (
        "multiway", ["kettle", "boiler"], None, None, True)
    assert multi.id and multi.created_at and multi.updated_at
    assert (await do(index.search("boiler 7", profile_key=profile.profile_key))).hits[0].id == "7"
    one = await do(index.create_synonym(m.Model.model_validate({"type": "oneway", "input": "teapot",
                                                                "synonyms": ["kettle"]})))
    assert (one.type, one.input, one.synonyms, one.terms) == ("oneway", "teapot", ["kettle"], None)
    assert await do(index.get_synonym(one.id)) == one
    off = await do(index.update_synonym(one.id, {"type": "oneway", "input": "teapot", "synonyms": ["kettle"],
                                                 "enabled": False}))
    assert off.enabled is False and off.id == one.id
    both = sorted([multi.id, one.id])
    assert sorted(s.id for s in (await do(index.list_synonyms())).items) == both
    assert sorted(s.id for s in await collect(index.iter_synonyms(page_size=1))) == both
    exported = await do(index.export_synonyms())
    assert sorted(s.id for s in exported) == both and all(isinstance(s, m.Synonym) for s in exported)
    solr = await do(index.export_synonyms_solr())
    assert isinstance(solr, str) and "kettle" in solr and "boiler" in solr
    replaced = await do(index.import_synonyms(solr="sofa, couch", mode="replace"))
    assert isinstance(replaced, m.SynonymImport) and (replaced.imported, replaced.total, replaced.mode) == (
        1, 1, "replace")
    appended = await do(index.import_synonyms(exported))
    assert (appended.imported, appended.total, appended.mode) == (2, 3, "append")
    now = await collect(index.iter_synonyms())
    assert sorted(tuple(s.terms or [s.input]) for s in now) == [("kettle", "boiler"), ("sofa", "couch"), ("teapot",)]
    assert multi.id not in {s.id for s in now}  # replaced, then imported again under new ids
    assert await do(index.delete_synonym(now[0].id)) is None
    await fails(lambda: index.get_synonym(now[0].id), 404, "NOT_FOUND")

    # ------------------------------------------------------------------ rules
    pin = await do(index.create_rule({"name": "pin 42", "conditions": [{"pattern": "kettle", "anchoring": "is"}],
                                      "consequence": {"pin": [{"id": "42", "position": 1}]}}))
    assert isinstance(pin, m.Rule)
    assert (pin.name, pin.enabled, pin.position, pin.filters) == ("pin 42", True, 1, None)
    assert pin.conditions == [{"pattern": "kettle", "anchoring": "is"}] and pin.validity == []
    assert pin.consequence["pin"] == [{"id": "42", "position": 1}]
    hide = await do(index.create_rule({"name": "hide 42", "enabled": False,
                                       "conditions": [{"pattern": "kettle", "anchoring": "contains"}],
                                       "consequence": {"hide": ["42"]}}))
    assert hide.position == 2 and await do(index.get_rule(hide.id)) == hide
    hide = await do(index.update_rule(hide.id, {**hide.model_dump(by_alias=True), "enabled": True}))
    assert hide.enabled is True
    ordered = await do(index.order_rules([hide.id, pin.id]))
    assert [(r.id, r.position) for r in ordered] == [(hide.id, 1), (pin.id, 2)]
    assert [r.id for r in (await do(index.list_rules())).items] == [hide.id, pin.id]
    assert [r.id for r in await collect(index.iter_rules(page_size=1))] == [hide.id, pin.id]
    tried = await do(index.test_rules("kettle", profile_key=profile.profile_key, per_page=3, page=1,
                                      rule={"name": "try", "conditions": [{"pattern": "kettle", "anchoring": "is"}],
                                            "consequence": {"userData": {"banner": "x"}}}))
    assert isinstance(tried, m.RuleTestAnswer)
    assert {(r.name, r.enabled, r.active) for r in tried.matched_rules} == {
        ("hide 42", True, True), ("pin 42", True, True), ("try", True, True)}
    assert hide.id in tried.applied_rules and "42" not in [h["id"] for h in tried.hits]
    assert tried.total == 2502 and tried.user_data == [{"banner": "x"}] and tried.redirect is None
    plain = await do(index.test_rules("steel", filters={"brand": ["Zed"]}))
    assert plain.matched_rules == [] and plain.applied_rules == [] and plain.total == 1252
    assert await do(index.delete_rule(pin.id)) is None
    await fails(lambda: index.get_rule(pin.id), 404, "NOT_FOUND")
    await do(index.delete_rule(hide.id))

    # ------------------------------------------------------------------ autocomplete
    config = await do(index.get_suggestion_config())
    assert isinstance(config, m.SuggestionConfig) and config.suggest_key
    assert [s.field for s in config.sources] == ["name"] and config.enabled
    assert isinstance(config.popular_queries, m.PopularQueries) and isinstance(config.products, m.SuggestedProducts)
    config = await do(index.update_suggestion_config({
        "sources": [{"field": "name", "weight": 2}], "maxSuggestions": 5,
        "popularQueries": {"enabled": False}, "products": {"enabled": True, "count": 2,
                                                           "profileKey": profile.profile_key}}))
    assert (config.max_suggestions, config.sources[0].weight, config.popular_queries.enabled) == (5, 2.0, False)
    assert (config.products.enabled, config.products.count, config.products.profile_key) == (
        True, 2, profile.profile_key)
    custom = await do(index.add_custom_suggestion("steel kettle", weight=50))
    assert isinstance(custom, m.CustomSuggestion) and (custom.text, custom.weight) == ("steel kettle", 50)
    assert [c.id for c in (await do(index.list_custom_suggestions())).items] == [custom.id]
    assert [c.id for c in await collect(index.iter_custom_suggestions())] == [custom.id]
    rebuilt = await do(index.wait_for_task(await do(index.rebuild_suggestions())))
    assert rebuilt.type == "suggestions.rebuild"
    config = await do(index.get_suggestion_config())
    assert config.built_at and config.built_count > 0
    suggested = await do(index.suggest("steel k", limit=3))
    assert isinstance(suggested, m.SuggestAnswer) and suggested.took_ms >= 0
    assert len(suggested.suggestions) == 3
    assert suggested.suggestions[0] == m.Suggestion(text="steel kettle", highlighted="<em>steel</em> <em>k</em>ettle",
                                                    source="custom"), suggested
    assert all(s.source == "name" and s.text.startswith("steel kettle ") for s in suggested.suggestions[1:])
    assert suggested.products is not None and len(suggested.products) <= 2
    public_suggest = await do(storefront.suggest(config.suggest_key, "steel k"))
    assert public_suggest.suggestions[0].text == "steel kettle" and len(public_suggest.suggestions) == 5
    assert await do(index.delete_custom_suggestion(custom.id)) is None

    # ------------------------------------------------------------------ replace sessions
    session = await do(index.open_replace_session())
    assert isinstance(session, ReplaceSession) and isinstance(session.info, m.ReplaceSessionInfo)
    assert (session.info.status, session.info.document_count, session.info.task_id) == ("open", 0, None)
    assert session.info.index_id == created.id and session.info.expires_at > session.info.created_at
    staged: list[UploadProgress] = []
    upload = await do(session.upload([product(i) for i in range(3)], batch_size=2, on_progress=staged.append))
    assert isinstance(upload, m.SessionUpload) and (upload.received, upload.document_count) == (1, 3)
    assert [(p.documents, p.batches, p.total, p.task_id) for p in staged] == [(2, 1, 3, None), (3, 2, 3, None)]
    assert (await do(session.get())).document_count == 3
    assert await do(session.abort()) is None
    assert (await do(index.get_replace_session(session.id))).status == "aborted"
    await fails(lambda: session.upload([product(1)]), 409, "CONFLICT")

    with pytest.raises(RuntimeError, match="feed broke"):
        async with scope(index.replace_session()) as broken:
            await do(broken.upload([product(1)]))
            raise RuntimeError("feed broke")
    assert (await do(index.get_replace_session(broken.id))).status == "aborted" and broken.task_id is None

    narrow = {**MAPPING, "fields": {**MAPPING["fields"], "color": {"type": "keyword", "facetable": True}}}
    async with scope(index.replace_session(mapping=narrow)) as fresh:
        assert fresh.info.mapping is not None and "color" in fresh.info.mapping["fields"]
        await do(fresh.upload(product(i) | {"color": "red"} for i in range(10, 15)))
    assert fresh.task_id is not None
    swapped = await do(index.wait_for_task(fresh.task_id))
    assert (swapped.type, swapped.details["received"]) == ("replace.commit", 5)
    assert (await do(index.get_replace_session(fresh.id))).status == "committed"
    assert sorted(d["id"] for d in await collect(index.iter_documents())) == ["10", "11", "12", "13", "14"]

    # ------------------------------------------------------------------ feed, integration, reindex, flush
    feed = await do(index.set_feed(feed_url, "json", schedule="daily", field_map={"sku": "id", "title": "name"}))
    assert isinstance(feed, m.Feed)
    assert (feed.url, feed.format, feed.schedule, feed.field_map) == (feed_url, "json", "daily",
                                                                       {"sku": "id", "title": "name"})
    assert feed.last_sync_at is None and feed.last_task_id is None
    synced = await do(index.wait_for_task(await do(index.sync_feed())))
    assert (synced.type, synced.details["received"]) == ("feed.sync", len(FEED))
    feed = await do(index.get_feed())
    assert feed.last_task_id == synced.task_id, (feed, synced)
    assert (await do(index.get_document("f1")))["name"] == "Feed kettle 1"
    assert await do(index.remove_feed()) is None
    await fails(lambda: index.get_feed(), 404, "NOT_FOUND")

    plugin = await do(index.set_integration("woocommerce", "Shop plugin", url="https://shop.example",
                                            version="1.2.3", manage_mapping=True))
    assert isinstance(plugin, m.Integration)
    assert (plugin.platform, plugin.name, plugin.url, plugin.version) == (
        "woocommerce", "Shop plugin", "https://shop.example", "1.2.3")
    assert plugin.settings == m.IntegrationSettings(manage_mapping=True)
    assert plugin.key_id and plugin.key_id.startswith("key_") and plugin.connected_at and plugin.updated_at
    assert (await do(index.get())).integration == plugin
    await fails(lambda: index.sync_feed(), 409, "INDEX_HAS_INTEGRATION")
    assert await do(index.remove_integration()) is None
    assert (await do(index.get())).integration is None

    reindex = await do(index.reindex())
    assert isinstance(reindex, m.TaskAccepted)
    try:
        cancel = await do(index.cancel_reindex())
    except ShopsearchError as error:  # it may have finished already
        assert (error.status, error.code) == (409, "CONFLICT")
    else:
        assert isinstance(cancel, m.ReindexCancelAnswer)
        assert cancel.task_id == reindex.task_id and cancel.status in ("canceled", "canceling", "processing")
    finished = await do(index.wait_for_task(reindex, raise_on_failure=False))
    assert finished.type == "index.reindex" and finished.status in ("succeeded", "canceled")
    await do(client.search(profile.profile_key, "kettle"))  # the index answers after the reindex

    flushed = await do(index.flush())
    assert isinstance(flushed, m.FlushAnswer) and flushed.previous_doc_count == len(FEED)
    assert (await do(index.wait_for_task(flushed))).type == "documents.flush"
    assert (await do(index.get())).document_count == 0

    # ------------------------------------------------------------------ deleting
    assert await do(index.delete()) is None
    await fails(lambda: index.get(), 404, "NOT_FOUND")
    await do(project.index(other.id).delete())
    await fails(lambda: client.index("prj_other", created.id).get(), 404, "NOT_FOUND")


async def analytics_after(index: Any, searches: int) -> m.Analytics:
    """Analytics once the searches are counted (they are recorded off the request path)."""
    import asyncio

    yesterday = date.today() - timedelta(days=1)
    for _ in range(100):
        answer = await do(index.analytics(start=yesterday, end=date.today().isoformat(), limit=10))
        if answer.totals.searches >= searches and answer.totals.clicks:
            return answer  # type: ignore[no-any-return]
        await asyncio.sleep(0.1)
    return answer  # type: ignore[no-any-return]


async def test_stores_near_a_point(shop: Shop, flavour: str) -> None:
    """``near`` on both search methods, ``distance_m`` on the hits (geo: issue 35)."""
    client = make_client(flavour, shop)
    storefront = make_client(flavour, shop, shop.public_key, headers={"Origin": ORIGIN})
    try:
        index = client.project(shop.project_id).index((await do(client.project(shop.project_id).create_index(
            f"stores-{flavour}", mapping={"fields": {"name": {"type": "text", "searchable": True},
                                                     "loc": {"type": "geopoint", "filterable": True,
                                                             "sortable": True}}}))).id)
        tasks = await do(index.upload_documents([
            {"id": "far", "name": "lamp", "loc": {"lat": 45.76, "lng": 4.84}},
            {"id": "near", "name": "lamp", "loc": {"lat": 48.86, "lng": 2.34}},
            {"id": "none", "name": "lamp"}]))
        assert [t.status for t in await do(index.wait_for_tasks(tasks))] == ["succeeded"]
        profile = await do(index.create_profile({"name": "stores", "queryFields": {"name": {"weight": 1}},
                                                 "sortOptions": [{"key": "near", "label": "Nearest",
                                                                  "sort": ["loc:near"]}]}))
        for answer in (await do(index.search("lamp", profile_key=profile.profile_key, sort="near", near=(48.85, 2.35))),
                       await do(storefront.search(profile.profile_key, "lamp", sort="near", near=(48.85, 2.35)))):
            assert [(h.id, h.distance_m is None) for h in answer.hits] == [("near", False), ("far", False),
                                                                          ("none", True)]
            assert 0 < answer.hits[0].distance_m < 2_000 < 380_000 < answer.hits[1].distance_m < 400_000
        await fails(lambda: index.search("lamp", profile_key=profile.profile_key, sort="near"), 400,
                    "VALIDATION_ERROR")
        await do(index.delete())
    finally:
        await close(client)
        await close(storefront)


async def test_searches_by_a_vector_and_similar_to(shop: Shop, flavour: str) -> None:
    """``vector`` and ``similar_to`` on both search methods, ``semantic`` on a profile (shop-supplied vectors)."""
    client = make_client(flavour, shop)
    storefront = make_client(flavour, shop, shop.public_key, headers={"Origin": ORIGIN})
    try:
        index = client.project(shop.project_id).index((await do(client.project(shop.project_id).create_index(
            f"vectors-{flavour}", mapping={"fields": {"name": {"type": "text", "searchable": True},
                                                      "vec": {"type": "vector", "dimensions": 3}}}))).id)
        axes = {"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0]}
        tasks = await do(index.upload_documents([
            {"id": f"{axis}{n}", "name": f"lamp {axis}", "vec": [v + 0.01 * n for v in vec]}
            for axis, vec in axes.items() for n in (1, 2)]))
        assert [t.status for t in await do(index.wait_for_tasks(tasks))] == ["succeeded"]
        profile = await do(index.create_profile({"name": "vectors", "queryFields": {"name": {"weight": 1}},
                                                 "semantic": {"field": "vec", "ratio": 1}}))
        assert isinstance(profile.semantic, m.Semantic)
        assert (profile.semantic.field, profile.semantic.ratio) == ("vec", 1)
        for answer in (await do(index.search(profile_key=profile.profile_key, vector=[0, 0, 1])),
                       await do(storefront.search(profile.profile_key, vector=[0, 0, 1]))):
            assert {h.id for h in answer.hits[:2]} == {"z1", "z2"}
        for answer in (await do(index.search(profile_key=profile.profile_key, similar_to="y1")),
                       await do(storefront.search(profile.profile_key, similar_to="y1"))):
            ids = [h.id for h in answer.hits]
            assert "y1" not in ids and ids[0] == "y2"
        await fails(lambda: index.search(profile_key=profile.profile_key, similar_to="no-such-doc"), 404,
                    "NOT_FOUND")
        await fails(lambda: storefront.search(profile.profile_key, similar_to="no-such-doc"), 404, "NOT_FOUND")
        await fails(lambda: index.search("lamp", profile_key=profile.profile_key, similar_to="y1"), 400,
                    "VALIDATION_ERROR")
        await do(index.delete())
    finally:
        await close(client)
        await close(storefront)


def test_both_clients_offer_the_same_methods() -> None:
    """One implementation: the handles are the same classes for both clients."""
    sync, asynchronous = Client("http://127.0.0.1:1"), AsyncClient("http://127.0.0.1:1")
    assert type(sync.index("p", "i")) is type(asynchronous.index("p", "i")) is Index
    assert isinstance(sync, Root) and isinstance(asynchronous, Root)
    sync.close()


# --------------------------------------------------------------------------- the READMEs' code, as written
README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"
MAIN_README = README.parents[2] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_readmes_python_runs_as_written(shop: Shop) -> None:
    """Each Python block of clients/python/README.md, in order in one namespace, and README.md's "From
    Python", with only the server's address, the key and the project id filled in."""
    phones = [{"id": "1", "name": "Apple iPhone 7 128GB", "brand": "Apple", "price": 449.0},
              {"id": "2", "name": "Samsung Galaxy S8", "brand": "Samsung", "price": 599.0},
              {"id": "sku-1", "name": "Apple iPhone 7 case", "brand": "Apple", "price": 19.0}]
    namespace: dict[str, Any] = {
        "read_products": lambda: iter(phones), "url": shop.base, "key": shop.key,
        "new_mapping": {"idField": "id", "fields": {"name": {"type": "text", "searchable": True},
                                                   "brand": {"type": "keyword", "searchable": True,
                                                             "facetable": True, "filterable": True},
                                                   "price": {"type": "float", "filterable": True,
                                                             "sortable": True},
                                                   "color": {"type": "keyword"}}}}
    output = io.StringIO()
    blocks = python_blocks(README.read_text())
    assert len(blocks) == 5
    with contextlib.redirect_stdout(output):
        for block in blocks:
            code = (block.replace("http://127.0.0.1:8000", shop.base).replace("ss_sk_…", shop.key)
                    .replace("prj_…", shop.project_id))
            exec(compile(code, str(README), "exec"), namespace)
        index = namespace["index"]
        assert index.get().document_count == 3 and index.get_document("sku-1")["brand"] == "Apple"
        # README.md: the "Try it" catalog, from a shop's server
        [main] = [b for b in python_blocks(MAIN_README.read_text()) if "upload_documents(products)" in b]
        with Client(shop.base, shop.key) as client:
            tried = client.project(shop.project_id).create_index("try it", mapping=MAPPING)
        main = main.replace("http://127.0.0.1:8000", shop.base)
        exec(compile(main, str(MAIN_README), "exec"), {"KEY": shop.key, "PRJ": shop.project_id, "IDX": tried.id,
                                                        "products": phones[:2]})
    printed = output.getvalue().splitlines()
    assert printed[0] == "3 sent"
    assert {line.split()[0] for line in printed[1:3]} == {"1", "sku-1"}  # "iphnoe 7": the typo finds them
    assert printed[3] == "2 {}" and printed[4].startswith("succeeded ")
    assert "400 PROFILE_INVALID" in output.getvalue() and "queryFields.title" in output.getvalue()
    assert printed[-1] == "Apple iPhone 7 128GB"
    namespace["client"].close()
