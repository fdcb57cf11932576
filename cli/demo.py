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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import httpx
import typer
from fastapi.testclient import TestClient
from shopsearch_client import Client, Index, ShopsearchError, Sync
from shopsearch_client.models import Profile
from sqlalchemy.orm import Session

import shared
from cli.database import operator_sessions, transaction
from cli.output import JsonOption, UrlOption, emit, fail, failures, notice, progress, service_url, table
from cli.tasks import STALL_SECONDS, stall_message
from control_plane.api_key import service as key_service
from control_plane.app import create_app
from control_plane.auth import repository as auth_repo
from control_plane.db import utcnow
from control_plane.org import service as org_service
from control_plane.project import service as project_service
from control_plane.security import hash_password
from control_plane.serving.follower import take_primary
from control_plane.tenants import service as tenant_service
from shared.plans import PLANS
from shared.settings import get_settings

CATALOG = Path(shared.__file__).parent / "datasets" / "bestbuy" / "products.json"
EMAIL = "demo@shopsearch.test"
ORG, PROJECT, INDEX, PROFILE = "Demo shop", "demo", "bestbuy", "storefront"
KEY_PREFIX = "shopsearch demo"
BATCH = 500  # documents per upload: one task each, the bar moves as each succeeds

SEPARATOR = " > "
MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True, "suggest": True},
        "categories": {"type": "keyword[]", "searchable": True, "suggest": True},
        # every level's path ("Cell Phones", "Cell Phones > iPhone", ...): the category tree
        "hierarchicalCategories": {"type": "keyword[]", "facetable": True, "filterable": True},
        # the name without its variant ("Apple - iPhone 7 128GB" of "... - Black (Verizon)"): one hit per model
        "model": {"type": "keyword", "filterable": True},
        "description": {"type": "text", "searchable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "popularity": {"type": "integer", "sortable": True},
        "image": {"type": "keyword", "searchable": False},
    },
}
FACETS: list[dict[str, Any]] = [
    {"field": "brand", "type": "terms", "label": "Brand", "size": 20},
    {"field": "hierarchicalCategories", "type": "hierarchy", "label": "Category", "separator": SEPARATOR,
     "size": 30},
    {"field": "price", "type": "range", "label": "Price", "ranges": [
        {"to": 50, "label": "Under $50"}, {"from": 50, "to": 200, "label": "$50 to $200"},
        {"from": 200, "to": 500, "label": "$200 to $500"}, {"from": 500, "label": "$500 and up"}]},
]
STOREFRONT: dict[str, Any] = {
    "name": PROFILE,
    # brand and category weigh most: "samsung" finds Samsung's phones before another brand's case
    # for one, "iphone" the iPhones (category "iPhone") before cases naming it three times
    "queryFields": {"name": {"weight": 10, "typo": True, "prefix": True},
                    "brand": {"weight": 12, "typo": True, "prefix": True},
                    "categories": {"weight": 10, "typo": True, "prefix": True},
                    "description": {"weight": 1, "typo": False, "prefix": True}},  # "phone" is one typo from "iphone"
    "operator": "and",
    "facets": ["brand", "hierarchicalCategories", "price"],
    "perPage": 20,
    "retrieve": ["name", "brand", "price", "image", "categories", "hierarchicalCategories"],
    "highlight": ["name", "brand"],
    "distinct": "model",
    "sortOptions": [{"key": "price-asc", "label": "Price: low to high", "sort": ["price:asc"]},
                    {"key": "price-desc", "label": "Price: high to low", "sort": ["price:desc"]},
                    {"key": "popular", "label": "Most popular", "sort": ["popularity:desc"]}],
    "boosts": [{"field": "popularity", "modifier": "log1p", "weight": 0.5}],
}
SUGGESTIONS: dict[str, Any] = {
    "enabled": True,
    "sources": [{"field": "brand", "weight": 2}, {"field": "categories", "weight": 1}],
    "maxSuggestions": 8,
    "products": {"enabled": True, "count": 4},  # the storefront profile's hits (set when saved)
}


def model_of(name: str) -> str:
    """A product's model: its name without the last " - " part when it has three (Best Buy names
    are "Brand - Product - Variant")."""
    parts = name.split(" - ")
    return " - ".join(parts[:-1]) if len(parts) >= 3 else name


def storefront_products(products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The catalog as the demo indexes it: each product's model and the paths of its categories."""
    return [{**p, "model": model_of(str(p.get("name", ""))),
             "hierarchicalCategories": [SEPARATOR.join(p["categories"][: i + 1]) for i in range(len(p["categories"]))]}
            for p in products]


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
    fresh keys (the previous demo keys are revoked: a key's secret is shown only when created); the
    page key allows ``origins`` and those the previous one allowed."""
    password = secrets.token_urlsafe(12)
    plan = largest_plan()
    user = auth_repo.get_user_by_email(db, EMAIL)
    org_id = None
    if user is not None:
        org_id = org_service.first_owned_org(db, user.id)
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
    for old in key_service.live_keys_named(db, project_id, KEY_PREFIX):
        old.revoked_at = utcnow()
        if old.type == "public":
            origins = [*origins, *(o for o in old.allowed_origins or () if o not in origins)]
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
def api_client(base: str) -> Iterator[tuple[Callable[[str], Client], bool]]:
    """What makes a Python client of the REST API with a key: to the server at ``base`` when one
    answers, else to the API app run in this process (its startup and shutdown included); and whether
    remote. Decided before anything is written, so a refusal leaves the database as it was."""
    if server_answers(base):
        yield (lambda key: Client(base, key, timeout=120)), True
        return
    settings = get_settings()
    # the lock of the process that owns the shard files (``serve --workers``): never two owners at once
    lock = take_primary(settings.data_dir)
    if lock is None:
        fail(f"a server owns {settings.data_dir} but does not answer at {base}: wait until it is ready, "
             "or pass its address with --url")
    try:
        # starlette's TestClient runs the app in-process (an httpx-style client of its own httpx build)
        with TestClient(create_app(settings), base_url=base) as local:
            yield (lambda key: Client(base, key, timeout=120, transport=InProcess(local))), False
    finally:
        lock.close()


class InProcess(httpx.BaseTransport):
    """Carries the client's requests to the API app running in this process."""

    def __init__(self, app: TestClient) -> None:
        self.app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.app.request(request.method, str(request.url), content=request.read(),
                                  headers=dict(request.headers))
        return httpx.Response(answer.status_code, headers=answer.headers.multi_items(), content=answer.content)


@contextmanager
def unknown_key(base: str) -> Iterator[None]:
    """A 401 for the demo's new key: the server at ``base`` serves another database."""
    try:
        yield
    except ShopsearchError as error:
        if error.status != 401:
            raise
        fail(f"the server at {base} does not know the demo's key; does it serve this data directory "
             f"({get_settings().data_dir})?")


def _fits(mapping: dict[str, Any]) -> bool:
    """Whether an index's mapping has every field of the demo's, as the demo marks it."""
    fields = mapping.get("fields") or {}
    return all(name in fields and all(fields[name].get(k) == v for k, v in spec.items())
               for name, spec in MAPPING["fields"].items())


def ensure_index(client: Client, project_id: str) -> Index[Sync]:
    """The demo's index, with its mapping and facets; one an older demo made with another mapping is
    replaced (its catalog is loaded again)."""
    project = client.project(project_id)
    found = [i for i in project.iter_indices() if i.name == INDEX]
    if found and not _fits(project.index(found[0].id).get_mapping()):
        project.index(found[0].id).delete()
        found = []
    index = project.index(found[0].id if found else project.create_index(INDEX, mapping=MAPPING).id)
    index.update_facets(FACETS)
    return index


def load_catalog(index: Index[Sync], products: list[dict[str, Any]]) -> bool:
    """Upload the catalog (when the index doesn't hold it yet) with a progress bar; whether it did."""
    if index.get().document_count == len(products):
        return False
    with progress() as bars:
        bar = bars.add_task(f"loading {len(products)} Best Buy products", total=len(products))
        tasks = index.upload_documents(products, batch_size=BATCH)
        for start, task in zip(range(0, len(products), BATCH), tasks, strict=True):
            wait_task(index, task.task_id, bars.console.print)
            bars.advance(bar, len(products[start:start + BATCH]))
    return True


def wait_task(index: Index[Sync], task_id: str, say: Any, timeout: float = 600.0) -> None:
    started = time.monotonic()
    stalled_said = False
    while True:
        task = index.get_task(task_id)
        if task.status == "succeeded":
            return
        if task.status in ("failed", "canceled"):
            fail(f"task {task_id} {task.status}: {task.error.message if task.error else ''}")
        waited = time.monotonic() - started
        if task.status == "enqueued" and waited > STALL_SECONDS and not stalled_said:
            stalled_said = True
            with operator_sessions() as sessions, sessions() as db:
                say(stall_message(db, task_id, waited))
        if waited > timeout:
            fail(f"task {task_id} still {task.status} after {timeout:.0f}s")
        time.sleep(0.1)


def ensure_profile(index: Index[Sync]) -> Profile:
    found = [p for p in index.iter_profiles() if p.name == PROFILE]
    return index.update_profile(found[0].id, STOREFRONT) if found else index.create_profile(STOREFRONT)


def ensure_suggestions(index: Index[Sync], profile_key: str) -> str:
    """Autocomplete from the brands and categories, with the storefront's products; its suggest key."""
    config = index.update_suggestion_config(
        {**SUGGESTIONS, "products": {**SUGGESTIONS["products"], "profileKey": profile_key}})
    wait_task(index, index.rebuild_suggestions().task_id, notice)
    return config.suggest_key


OriginOption = Annotated[list[str] | None, typer.Option(
    "--origin", help="Also let the page key search from this origin (your own page's, e.g. http://localhost:8080); "
                     "repeatable, and kept by later runs")]


def demo(url: UrlOption = None, origin: OriginOption = None, as_json: JsonOption = False) -> None:
    """Set up a demo shop with the Best Buy catalog and print its keys, a curl and the demo page's URL.

    Works on a fresh data directory with no server running (then start `shopsearch serve`), or
    against the server running at --url. Running it again reuses the demo tenant and catalog.
    """
    base = service_url(url)
    products = storefront_products([{"id": str(i), **p} for i, p in enumerate(json.loads(CATALOG.read_text()))])
    with failures(), unknown_key(base), api_client(base) as (connect, remote):
        if not remote:
            notice(f"no server answers at {base}: running the API in this process for the setup")
        with transaction(create=True) as db:
            tenant = prepare_tenant(db, [*local_origins(base), *(o.rstrip("/") for o in origin or ())])
        with connect(tenant.secret_key) as client:
            index = ensure_index(client, tenant.project_id)
            loaded = load_catalog(index, products)
            profile = ensure_profile(index)
            suggest_key = ensure_suggestions(index, profile.profile_key)
    page = f"{base}/demo#key={tenant.public_key}&profile={profile.profile_key}&suggest={suggest_key}"
    body = json.dumps({"q": "iphone"})
    curl = (f"curl -s -X POST {base}/v1/search/{profile.profile_key} -H {shlex.quote('Authorization: Bearer ' + tenant.public_key)} "
            f"-H {shlex.quote('Origin: ' + local_origins(base)[0])} -H 'Content-Type: application/json' -d {shlex.quote(body)}")
    answer = {
        "email": EMAIL, "password": tenant.password, "orgId": tenant.org_id, "projectId": tenant.project_id,
        "plan": tenant.plan, "indexId": index.id, "documents": len(products), "profileKey": profile.profile_key,
        "suggestKey": suggest_key, "secretKey": tenant.secret_key, "publicKey": tenant.public_key, "pageUrl": page,
        "curl": curl,
        "reused": tenant.reused, "catalogLoaded": loaded, "serverRunning": remote,
    }
    fields = table("field", "value", show_header=False, ids=("field", "value"), title="shopsearch demo", rows=[
        ("organization", f"{ORG} ({tenant.org_id}, plan {tenant.plan})" + (", reused" if tenant.reused else "")),
        ("project", tenant.project_id), ("index", f"{index.id} ({len(products)} products)"),
        ("profile key", profile.profile_key), ("suggest key", suggest_key), ("secret key", tenant.secret_key),
        ("public key", tenant.public_key),
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
