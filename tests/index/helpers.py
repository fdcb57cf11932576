"""Helpers shared by the indexing tests (indices, documents, tasks, basic search)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.factories import Account, bearer, make_account, make_key, make_project
from tests.fixtures import tasks

FINAL = tasks.FINAL

PRODUCT_MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "stock": {"type": "integer", "filterable": True},
        "inStock": {"type": "boolean", "filterable": True},
        "tags": {"type": "keyword[]", "facetable": True, "filterable": True},
    },
}


@dataclass
class Tenant:
    account: Account
    project_id: str
    key: str
    read_key: str

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.key)

    @property
    def read_headers(self) -> dict[str, str]:
        return bearer(self.read_key)

    def url(self, index_id: str | None = None, suffix: str = "") -> str:
        base = f"/v1/projects/{self.project_id}/indices"
        if index_id is None:
            return base + suffix
        return f"{base}/{index_id}{suffix}"

    @property
    def tasks_url(self) -> str:
        return f"/v1/projects/{self.project_id}/tasks"


def make_tenant(app: Any) -> Tenant:
    account = make_account(app)
    project_id = make_project(app, account)
    return Tenant(account, project_id, make_key(app, project_id, access="full"), make_key(app, project_id, access="read"))


def create_index(client: Any, tenant: Tenant, name: str = "products", **body: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"name": name, "mapping": PRODUCT_MAPPING}
    payload.update(body)
    response = client.post(tenant.url(), json=payload, headers=tenant.headers)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def wait_task(client: Any, headers: dict[str, str], project_id: str, task_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """Poll a task until it reaches a final state (in-process: a 503 is a failure)."""
    return tasks.wait_task(client, project_id, task_id, timeout, headers=headers, pause=0.03, retry_unavailable=False)


def products(n: int, start: int = 0, **extra: Any) -> list[dict[str, Any]]:
    brands = ["Acme", "Zed", "Nova", "Orbit"]
    return [
        {
            "id": f"p{i}",
            "name": f"Product {i} {'phone' if i % 2 else 'laptop'}",
            "brand": brands[i % len(brands)],
            "price": float(10 + i),
            "stock": i % 7,
            "inStock": bool(i % 3),
            "tags": ["new"] if i % 5 == 0 else ["sale"],
            **extra,
        }
        for i in range(start, start + n)
    ]


def upload(client: Any, tenant: Tenant, index_id: str, docs: list[dict[str, Any]], wait: bool = True) -> dict[str, Any]:
    response = client.post(tenant.url(index_id, "/documents"), json=docs, headers=tenant.headers)
    assert response.status_code == 202, response.text
    task_id = response.json()["taskId"]
    if not wait:
        return {"taskId": task_id}
    task = wait_task(client, tenant.headers, tenant.project_id, task_id)
    assert task["status"] == "succeeded", task
    return task


def search(client: Any, tenant: Tenant, index_id: str, **body: Any) -> dict[str, Any]:
    response = client.post(tenant.url(index_id, "/search"), json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def create_catalog_index(client: Any, tenant: Tenant, catalog: list[dict[str, Any]], mapping: dict[str, Any],
                         name: str = "bestbuy", shards: int = 2) -> dict[str, Any]:
    """An index of ``catalog`` (uploaded in batches of 1000, every task succeeded): the Best Buy
    catalog tests start from this."""
    response = client.post(tenant.url(), json={"name": name, "shards": shards, "mapping": mapping},
                           headers=tenant.headers)
    assert response.status_code == 201, response.text
    index = response.json()
    task_ids = []
    for start in range(0, len(catalog), 1000):
        response = client.post(tenant.url(index["id"], "/documents"), json=catalog[start:start + 1000],
                               headers=tenant.headers)
        assert response.status_code == 202, response.text
        task_ids.append(response.json()["taskId"])
    for task_id in task_ids:
        assert wait_task(client, tenant.headers, tenant.project_id, task_id, timeout=180)["status"] == "succeeded"
    return index  # type: ignore[no-any-return]


def insert_index_row(db: Any, **values: Any) -> None:
    """An ``indices`` row with just these columns, as an older revision's migration test needs it
    (the model has columns that revision lacks)."""
    from sqlalchemy import column, insert, table

    from control_plane.db import utcnow
    from control_plane.index.models import Index

    values = {"created_at": utcnow(), "updated_at": utcnow(), **values}
    columns = Index.__table__.c
    db.execute(insert(table("indices", *(column(name, columns[name].type) for name in values))).values(**values))
