"""``/mcp`` through the official SDK's own client, over HTTP to a real uvicorn server on 127.0.0.1.

Without a key (and with a public key), with a read key, an index-scoped key and a full key; bad
arguments to every tool answer a tool error and the server keeps answering.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import MCPError

from tests.factories import make_key
from tests.index.helpers import (
    PRODUCT_MAPPING,
    Tenant,
    create_index,
    make_tenant,
    products,
    upload,
    wait_task,
)
from tests.mcp.helpers import call_tool, mcp_client, serving

# brands are suggested
MAPPING = {**PRODUCT_MAPPING, "fields": {**PRODUCT_MAPPING["fields"],
                                         "brand": {**PRODUCT_MAPPING["fields"]["brand"], "suggest": True}}}


@pytest.fixture(scope="module")
def base_url(app) -> Iterator[str]:
    with serving(app) as url:
        yield url


@pytest.fixture(scope="module")
def shop(app, base_url) -> dict[str, Any]:
    tenant = make_tenant(app)
    with httpx.Client(base_url=base_url, timeout=30) as http:
        first = create_index(http, tenant, name="phones", mapping=MAPPING)
        upload(http, tenant, first["id"], products(12))
        second = create_index(http, tenant, name="other")
        upload(http, tenant, second["id"], products(3))
        rebuilt = http.post(tenant.url(first["id"], "/suggestions/rebuild"), headers=tenant.headers)
        assert rebuilt.status_code == 202, rebuilt.text
        task = wait_task(http, tenant.headers, tenant.project_id, rebuilt.json()["taskId"])
        assert task["status"] == "succeeded", task
    return {
        "tenant": tenant,
        "index": first["id"],
        "other": second["id"],
        "scoped": make_key(app, tenant.project_id, access="read", index_id=first["id"]),
    }


async def _tool_names(base_url: str, key: str) -> set[str]:
    async with mcp_client(base_url, key) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


READ_TOOLS = {"list_indices", "search", "suggest", "get_document", "get_task"}


def test_without_a_secret_key_401_or_403(base_url, app, shop):
    tenant: Tenant = shop["tenant"]
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth, status, code in ((None, 401, "UNAUTHENTICATED"), ("Bearer ss_sk_nonsense", 401, "UNAUTHENTICATED"),
                               (f"Bearer {make_key(app, tenant.project_id, key_type='public', access=None)}",
                                403, "FORBIDDEN"),
                               (f"Bearer {tenant.account.token}", 403, "FORBIDDEN")):
        response = httpx.post(base_url + "/mcp", json=message, headers={**headers, **({"Authorization": auth} if auth else {})})
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), auth
    key = {"Authorization": f"Bearer {tenant.key}"}
    assert httpx.get(base_url + "/mcp", headers={**headers, **key}).status_code == 405  # stateless: POST only
    broken = httpx.post(base_url + "/mcp", content=b"{not json", headers={**headers, **key, "Content-Type": "application/json"})
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
    # the SDK's client gets no session either
    statuses: list[int] = []

    async def list_without_a_key() -> None:
        async with mcp_client(base_url, "", statuses) as client:
            await client.list_tools()

    # the SDK raises the same MCPError for any non-2xx answer: the status it was answered says which
    with pytest.RaisesGroup(pytest.RaisesGroup(MCPError)):
        asyncio.run(list_without_a_key())
    assert statuses and set(statuses) == {401}, statuses  # (it sends the initialize and a close)


async def test_read_key_reads_and_may_not_write(base_url, shop):
    tenant: Tenant = shop["tenant"]
    key, index_id = tenant.read_key, shop["index"]
    assert await _tool_names(base_url, key) == READ_TOOLS

    error, listed = await call_tool(base_url, key, "list_indices", {})
    assert not error
    assert {i["id"] for i in listed["items"]} == {shop["index"], shop["other"]}

    error, found = await call_tool(base_url, key, "search", {
        "index_id": index_id, "q": "phone", "filters": {"brand": "Zed"}, "facets": ["brand"], "per_page": 5})
    assert not error, found
    found = found
    assert found["total"] == 3 and {h["document"]["brand"] for h in found["hits"]} == {"Zed"}
    assert found["facets"]  # counted
    error, ordered = await call_tool(base_url, key, "search", {"index_id": index_id, "q": "", "sort": "nonsense"})
    assert error and ordered.startswith("VALIDATION_ERROR")
    # similar_to reaches the search as similarTo (this index has no vector field to rank by)
    error, similar = await call_tool(base_url, key, "search", {"index_id": index_id, "similar_to": "p3"})
    assert error and similar.startswith("VALIDATION_ERROR") and "similarTo" in similar, similar

    error, suggested = await call_tool(base_url, key, "suggest", {"index_id": index_id, "q": "zed", "limit": 3})
    assert not error, suggested
    assert suggested["suggestions"][0]["text"] == "Zed"

    error, document = await call_tool(base_url, key, "get_document", {"index_id": index_id, "document_id": "p3"})
    assert not error and document["name"] == "Product 3 phone"

    error, refused = await call_tool(base_url, key, "upload_documents", {"index_id": index_id, "documents": [{"id": "x"}]})
    assert error and refused.startswith("FORBIDDEN")
    error, refused = await call_tool(base_url, key, "delete_documents", {"index_id": index_id, "ids": ["p1"]})
    assert error and refused.startswith("FORBIDDEN")


async def test_index_scoped_key_sees_its_index_only(base_url, shop):
    key, index_id, other = shop["scoped"], shop["index"], shop["other"]
    error, listed = await call_tool(base_url, key, "list_indices", {})
    assert not error and [i["id"] for i in listed["items"]] == [index_id]
    error, found = await call_tool(base_url, key, "search", {"index_id": index_id, "q": "laptop"})
    assert not error and found["total"] == 6
    for tool, arguments in (("search", {"index_id": other, "q": "laptop"}),
                            ("suggest", {"index_id": other, "q": "zed"}),
                            ("get_document", {"index_id": other, "document_id": "p1"})):
        error, text = await call_tool(base_url, key, tool, arguments)
        assert error and text.startswith("NOT_FOUND"), (tool, text)


async def test_full_key_uploads_deletes_and_reads_the_task(base_url, shop):
    tenant: Tenant = shop["tenant"]
    key, index_id = tenant.key, shop["index"]
    assert await _tool_names(base_url, key) == READ_TOOLS | {"upload_documents", "delete_documents"}
    error, accepted = await call_tool(base_url, key, "upload_documents", {
        "index_id": index_id, "documents": [{"id": "m1", "name": "mcp kettle", "brand": "Acme", "price": 5.0}]})
    assert not error, accepted
    task_id = accepted["taskId"]
    with httpx.Client(base_url=base_url, timeout=30) as http:
        assert wait_task(http, tenant.headers, tenant.project_id, task_id)["status"] == "succeeded"
    error, task = await call_tool(base_url, key, "get_task", {"task_id": task_id})
    assert not error and task["status"] == "succeeded" and task["type"]
    error, found = await call_tool(base_url, key, "search", {"index_id": index_id, "q": "kettle"})
    assert not error and [h["id"] for h in found["hits"]] == ["m1"]

    error, accepted = await call_tool(base_url, key, "delete_documents", {"index_id": index_id, "ids": ["m1"]})
    assert not error
    with httpx.Client(base_url=base_url, timeout=30) as http:
        assert wait_task(http, tenant.headers, tenant.project_id, accepted["taskId"])["status"] == "succeeded"
    error, text = await call_tool(base_url, key, "get_document", {"index_id": index_id, "document_id": "m1"})
    assert error and text.startswith("NOT_FOUND")


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("list_indices", {"limit": 0}, ""),
    ("list_indices", {"limit": "many"}, ""),
    ("list_indices", {"cursor": "not a cursor"}, "VALIDATION_ERROR"),
    ("search", {}, ""),
    ("search", {"index_id": "idx_missing", "q": "x"}, "NOT_FOUND"),
    ("search", {"index_id": "{index}", "page": 0}, "VALIDATION_ERROR"),
    ("search", {"index_id": "{index}", "filters": {"nope": "x"}}, "VALIDATION_ERROR"),
    ("search", {"index_id": "{index}", "filters": "brand = x"}, ""),
    ("search", {"index_id": "{index}", "facets": ["name"]}, ""),
    ("search", {"index_id": "{index}", "profile_key": "missing"}, "NOT_FOUND"),
    ("suggest", {"index_id": "{index}"}, ""),
    ("suggest", {"index_id": "{index}", "q": "z", "limit": 50}, "VALIDATION_ERROR"),
    ("suggest", {"index_id": "{index}", "q": "z" * 201}, "VALIDATION_ERROR"),
    ("suggest", {"index_id": "idx_missing", "q": "z"}, "NOT_FOUND"),
    ("get_document", {"index_id": "{index}"}, ""),
    ("get_document", {"index_id": "{index}", "document_id": "nope"}, "NOT_FOUND"),
    ("get_task", {"task_id": "tsk_missing"}, "NOT_FOUND"),
    ("get_task", {"task_id": 12}, ""),
    ("upload_documents", {"index_id": "{index}", "documents": []}, ""),
    ("upload_documents", {"index_id": "{index}", "documents": [{"name": "no id"}]}, "VALIDATION_ERROR"),
    ("upload_documents", {"index_id": "{index}", "documents": [{"id": "b1", "price": "cheap"}]}, "VALIDATION_ERROR"),
    ("upload_documents", {"index_id": "{index}", "documents": "nope"}, ""),
    ("delete_documents", {"index_id": "{index}", "ids": [{"a": 1}]}, "VALIDATION_ERROR"),
    ("delete_documents", {"index_id": "idx_missing", "ids": ["a"]}, "NOT_FOUND"),
    ("no_such_tool", {}, ""),
]


async def test_bad_arguments_are_tool_errors(base_url, shop):
    tenant: Tenant = shop["tenant"]
    for tool, arguments, code in BAD_ARGUMENTS:
        filled = {k: (shop["index"] if v == "{index}" else v) for k, v in arguments.items()}
        error, text = await call_tool(base_url, tenant.key, tool, filled)
        assert error, (tool, arguments, text)
        assert text.startswith(code), (tool, arguments, text)
    # nothing was half-applied: the index holds what it held
    error, found = await call_tool(base_url, tenant.key, "search", {"index_id": shop["index"], "q": ""})
    assert not error and found["total"] == 12


async def test_another_tenants_ids_are_not_found(base_url, app, shop):
    stranger = make_tenant(app)  # a full key of another organization's project
    tenant: Tenant = shop["tenant"]
    with httpx.Client(base_url=base_url, timeout=30) as http:
        task_id = http.post(tenant.url(shop["index"], "/documents/delete"), json=["nothing"],
                            headers=tenant.headers).json()["taskId"]
    error, listed = await call_tool(base_url, stranger.key, "list_indices", {})
    assert not error and listed["items"] == []
    for tool, arguments in (("search", {"index_id": shop["index"], "q": ""}),
                            ("suggest", {"index_id": shop["index"], "q": "zed"}),
                            ("get_document", {"index_id": shop["index"], "document_id": "p1"}),
                            ("get_task", {"task_id": task_id}),
                            ("upload_documents", {"index_id": shop["index"], "documents": [{"id": "evil"}]}),
                            ("delete_documents", {"index_id": shop["index"], "ids": ["p1"]})):
        error, text = await call_tool(base_url, stranger.key, tool, arguments)
        assert error and text.startswith("NOT_FOUND"), (tool, text)
