"""``shopsearch demo``: a newcomer's first five minutes, on the embedded default.

A demo tenant on the largest plan (the same one each run), the Best Buy catalog that ships in the
repository, a storefront profile with facets, and a public key for the local origin; it prints the
keys, a ready ``curl`` and the URL of the demo page that ``serve`` answers at ``/demo``.

How the work is done: the tenant, its plan and its keys are operator work on the database (as
``tenants create``). The index, the catalog and the profile go through the REST API with the demo's
secret key, so they are validated and indexed exactly as a merchant's would be: over HTTP when a
server answers at ``--url`` (it must serve this database), otherwise in this process, which runs the
API app (shards, task runner) on the data directory and stops it at the end; ``shopsearch serve``
then serves the page. Run twice, it reuses the tenant, the index (the catalog is loaded only when the
index doesn't hold it) and the profile, and replaces the demo keys (a key is shown only once).
"""

from __future__ import annotations

import json
import secrets
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import httpx
import typer
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

import shared
from cli.database import operator_sessions, transaction
from cli.output import JsonOption, UrlOption, emit, fail, failures, notice, progress, service_url, table
from cli.tasks import STALL_SECONDS, stall_message
from control_plane.api_key import service as key_service
from control_plane.api_key.models import ApiKey
from control_plane.app import create_app
from control_plane.auth import repository as auth_repo
from control_plane.db import utcnow
from control_plane.org import service as org_service
from control_plane.org import tenants as tenant_service
from control_plane.org.models import Membership
from control_plane.project import service as project_service
from control_plane.security import hash_password
from control_plane.serving.follower import take_primary
from shared.plans import PLANS
from shared.settings import get_settings

CATALOG = Path(shared.__file__).parent / "datasets" / "bestbuy" / "products.json"
EMAIL = "demo@shopsearch.test"
ORG, PROJECT, INDEX, PROFILE = "Demo shop", "demo", "bestbuy", "storefront"
KEY_PREFIX = "shopsearch demo"
BATCH = 500  # documents per upload: one task each, the bar moves as each succeeds

MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "categories": {"type": "keyword[]", "searchable": True, "facetable": True, "filterable": True},
        "description": {"type": "text", "searchable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "popularity": {"type": "integer", "sortable": True},
        "image": {"type": "keyword", "searchable": False},
    },
}
FACETS: list[dict[str, Any]] = [
    {"field": "brand", "type": "terms", "label": "Brand"},
    {"field": "categories", "type": "terms", "label": "Category"},
    {"field": "price", "type": "range", "label": "Price", "ranges": [
        {"to": 50, "label": "Under $50"}, {"from": 50, "to": 200, "label": "$50 to $200"},
        {"from": 200, "to": 500, "label": "$200 to $500"}, {"from": 500, "label": "$500 and up"}]},
]
STOREFRONT: dict[str, Any] = {
    "name": PROFILE,
    "queryFields": {"name": {"weight": 10, "typo": True, "prefix": True},
                    "brand": {"weight": 5, "typo": True, "prefix": True},
                    "categories": {"weight": 2, "typo": True, "prefix": True},
                    "description": {"weight": 1, "typo": False, "prefix": True}},  # "phone" is one typo from "iphone"
    "operator": "and",
    "facets": ["brand", "categories", "price"],
    "perPage": 20,
    "retrieve": ["name", "brand", "price", "image", "categories"],
    "highlight": ["name"],
    "sortOptions": [{"key": "price-asc", "label": "Price: low to high", "sort": ["price:asc"]},
                    {"key": "price-desc", "label": "Price: high to low", "sort": ["price:desc"]}],
    "boosts": [{"field": "popularity", "modifier": "log1p", "weight": 0.05}],
}


@dataclass(frozen=True)
class DemoTenant:
    org_id: str
    project_id: str
    plan: str
    password: str
    secret_key: str
    public_key: str
    reused: bool


def largest_plan() -> str:
    return max(PLANS.values(), key=lambda p: (p.max_documents_per_index, p.max_searches_per_second)).plan


def local_origins(base: str) -> list[str]:
    """The origins the demo page may be opened from: the URL's, and its loopback twin."""
    parts = urlsplit(base)
    origin = f"{parts.scheme}://{parts.netloc}"
    port = f":{parts.port}" if parts.port else ""
    twins = {"127.0.0.1": "localhost", "localhost": "127.0.0.1"}
    out = [origin]
    if parts.hostname in twins:
        out.append(f"{parts.scheme}://{twins[parts.hostname]}{port}")
    return out


def prepare_tenant(db: Session, origins: list[str]) -> DemoTenant:
    """The demo tenant (created once, then reused), on the largest plan, with a fresh password and
    fresh keys (the previous demo keys are revoked: a key's secret is shown only when created)."""
    password = secrets.token_urlsafe(12)
    plan = largest_plan()
    user = auth_repo.get_user_by_email(db, EMAIL)
    org_id = None
    if user is not None:
        org_id = db.scalar(select(Membership.org_id).where(Membership.user_id == user.id, Membership.role == "owner")
                           .order_by(Membership.created_at).limit(1))
    if user is None or org_id is None:
        if user is not None:
            fail(f"{EMAIL} exists but owns no organization; remove that user or use another data directory")
        created = tenant_service.create_tenant(db, email=EMAIL, password=password, org_name=ORG,
                                               project_name=PROJECT, verified=True)
        org_id, project_id, reused = created.org_id, created.project_id, False
    else:
        user.password_hash = hash_password(password)
        user.email_verified_at = user.email_verified_at or utcnow()
        projects = project_service.projects_of(db, org_id)
        project_id = projects[0].id if projects else project_service.create_project(db, org_id, PROJECT).id
        reused = True
    org_service.change_plan(db, org_id, "owner", plan)
    for old in db.scalars(select(ApiKey).where(ApiKey.project_id == project_id, ApiKey.revoked_at.is_(None),
                                               ApiKey.name.startswith(KEY_PREFIX))):
        old.revoked_at = utcnow()
    _, secret_key = key_service.create_key_unchecked(
        db, project_id, key_service.NewKey(type="secret", name=f"{KEY_PREFIX} secret", access="full"), created_by=None)
    _, public_key = key_service.create_key_unchecked(
        db, project_id, key_service.NewKey(type="public", name=f"{KEY_PREFIX} page", allowed_origins=origins),
        created_by=None)
    db.flush()
    return DemoTenant(org_id, project_id, plan, password, secret_key, public_key, reused)


def server_answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def api_client(base: str) -> Iterator[tuple[httpx.Client, bool]]:
    """A client of the REST API: the server at ``base`` when one answers, else the API app run in
    this process (its startup and shutdown included); and whether remote. Decided before anything is
    written, so a refusal leaves the database as it was."""
    if server_answers(base):
        with httpx.Client(base_url=base, timeout=120) as http:
            yield http, True
        return
    settings = get_settings()
    # the lock of the process that owns the shard files (``serve --workers``): never two owners at once
    lock = take_primary(settings.data_dir)
    if lock is None:
        fail(f"a server owns {settings.data_dir} but does not answer at {base}: wait until it is ready, "
             "or pass its address with --url")
    try:
        # starlette's TestClient runs the app in-process; an httpx-style client (of its own httpx build)
        with TestClient(create_app(settings), base_url=base) as local:
            yield cast(httpx.Client, local), False
    finally:
        lock.close()


def _call(http: httpx.Client, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 202)) -> Any:
    response = http.request(method, path, json=body)
    if response.status_code == 401:
        fail(f"{method} {path} answered 401: the server at {http.base_url} does not know the demo's key; "
             f"does it serve this data directory ({get_settings().data_dir})?")
    if response.status_code not in ok:
        fail(f"{method} {path} answered {response.status_code}: {response.text[:500]}")
    return response.json() if response.content else None


def ensure_index(http: httpx.Client, project_id: str) -> dict[str, Any]:
    base = f"/v1/projects/{project_id}/indices"
    found = [i for i in _call(http, "GET", f"{base}?limit=100")["items"] if i["name"] == INDEX]
    index = found[0] if found else _call(http, "POST", base, {"name": INDEX, "mapping": MAPPING})
    _call(http, "PUT", f"{base}/{index['id']}/facets", {"facets": FACETS})
    return index  # type: ignore[no-any-return]


def load_catalog(http: httpx.Client, project_id: str, index: dict[str, Any], products: list[dict[str, Any]]) -> bool:
    """Upload the catalog (when the index doesn't hold it yet) with a progress bar; whether it did."""
    url = f"/v1/projects/{project_id}/indices/{index['id']}"
    if _call(http, "GET", url)["documentCount"] == len(products):
        return False
    tasks = []
    with progress() as bars:
        bar = bars.add_task(f"loading {len(products)} Best Buy products", total=len(products))
        for start in range(0, len(products), BATCH):
            batch = products[start:start + BATCH]
            tasks.append((_call(http, "POST", f"{url}/documents", batch)["taskId"], len(batch)))
        for task_id, size in tasks:
            wait_task(http, project_id, task_id, bars.console.print)
            bars.advance(bar, size)
    return True


def wait_task(http: httpx.Client, project_id: str, task_id: str, say: Any, timeout: float = 600.0) -> None:
    started = time.monotonic()
    stalled_said = False
    while True:
        task = _call(http, "GET", f"/v1/projects/{project_id}/tasks/{task_id}")
        if task["status"] == "succeeded":
            return
        if task["status"] in ("failed", "canceled"):
            fail(f"task {task_id} {task['status']}: {(task.get('error') or {}).get('message', '')}")
        waited = time.monotonic() - started
        if task["status"] == "enqueued" and waited > STALL_SECONDS and not stalled_said:
            stalled_said = True
            with operator_sessions() as sessions, sessions() as db:
                say(stall_message(db, task_id, waited))
        if waited > timeout:
            fail(f"task {task_id} still {task['status']} after {timeout:.0f}s")
        time.sleep(0.1)


def ensure_profile(http: httpx.Client, project_id: str, index_id: str) -> dict[str, Any]:
    base = f"/v1/projects/{project_id}/indices/{index_id}/profiles"
    found = [p for p in _call(http, "GET", f"{base}?limit=100")["items"] if p["name"] == PROFILE]
    if found:
        return _call(http, "PUT", f"{base}/{found[0]['id']}", STOREFRONT)  # type: ignore[no-any-return]
    return _call(http, "POST", base, STOREFRONT)  # type: ignore[no-any-return]


def demo(url: UrlOption = None, as_json: JsonOption = False) -> None:
    """Set up a demo shop with the Best Buy catalog and print its keys, a curl and the demo page's URL.

    Works on a fresh data directory with no server running (then start `shopsearch serve`), or
    against the server running at --url. Running it again reuses the demo tenant and catalog.
    """
    base = service_url(url)
    products = [{"id": str(i), **p} for i, p in enumerate(json.loads(CATALOG.read_text()))]
    with failures(), api_client(base) as (http, remote):
        if not remote:
            notice(f"no server answers at {base}: running the API in this process for the setup")
        with transaction() as db:
            tenant = prepare_tenant(db, local_origins(base))
        http.headers["Authorization"] = f"Bearer {tenant.secret_key}"
        index = ensure_index(http, tenant.project_id)
        loaded = load_catalog(http, tenant.project_id, index, products)
        profile = ensure_profile(http, tenant.project_id, index["id"])
    page = f"{base}/demo#key={tenant.public_key}&profile={profile['profileKey']}"
    body = json.dumps({"q": "iphone"})
    curl = (f"curl -s -X POST {base}/v1/search/{profile['profileKey']} -H {shlex.quote('Authorization: Bearer ' + tenant.public_key)} "
            f"-H {shlex.quote('Origin: ' + local_origins(base)[0])} -H 'Content-Type: application/json' -d {shlex.quote(body)}")
    answer = {
        "email": EMAIL, "password": tenant.password, "orgId": tenant.org_id, "projectId": tenant.project_id,
        "plan": tenant.plan, "indexId": index["id"], "documents": len(products), "profileKey": profile["profileKey"],
        "secretKey": tenant.secret_key, "publicKey": tenant.public_key, "pageUrl": page, "curl": curl,
        "reused": tenant.reused, "catalogLoaded": loaded, "serverRunning": remote,
    }
    fields = table("field", "value", show_header=False, ids=("field", "value"), title="shopsearch demo", rows=[
        ("organization", f"{ORG} ({tenant.org_id}, plan {tenant.plan})" + (", reused" if tenant.reused else "")),
        ("project", tenant.project_id), ("index", f"{index['id']} ({len(products)} products)"),
        ("profile key", profile["profileKey"]), ("secret key", tenant.secret_key), ("public key", tenant.public_key),
    ])
    emit(answer, as_json=as_json, human=fields)
    if as_json:
        return
    steps = ["", "Search from a shell (a browser sends the Origin header itself):", curl, "",
             "Open the demo page:", page, "",
             f"The merchant cabinet: {base}/ (sign in as {EMAIL}, password {tenant.password})"]
    if not remote:
        steps[0:0] = ["", f"Start the service first, on the same data directory: shopsearch serve --port "
                          f"{urlsplit(base).port or 80}"]
    emit("\n".join(steps), as_json=False)  # plain lines, never wrapped: ready to copy

if __name__ == "__main__":
    typer.run(demo)
