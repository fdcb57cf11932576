"""404 before 403, as a table (spec §5 rules 2 and 5, §7; issue 8).

Every route of the app under /v1 that takes an id in its path is called, for each caller (member
session, admin session, read key, full key, and read/full keys scoped to one index), with ids of:

- another organization (``other_org``),
- another project of the caller's organization (``other_project``; the caller's keys cannot see it),
- another index of the caller's project (``other_index``; hidden from keys scoped to the first one),
- nothing at all (``unknown``).

The foreign id is put at each depth of the path under the caller's own parents (``/projects/MINE/
indices/THEIRS``, ``/projects/MINE/indices/MINE/profiles/THEIRS`` …); a combination the caller may
legitimately see (its organization's other project for a session) is left to the domain tests. Every
other one must answer 404 ``NOT_FOUND``. No body is sent: tenancy and existence are decided before the
body is validated — except on the two hot search routes, which resolve the index or handle after
validation and get a valid body.

The routes come from ``app.routes``: a route with a path id this table does not know fails
``test_every_route_with_an_id_is_in_the_table``, so a new route cannot be forgotten.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts

from control_plane.app import create_app
from shared.settings import Settings
from tests.factories import Account, add_member, bearer, make_account, make_key, make_project
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import PRODUCT_MAPPING, wait_task

# Path ids the table fills, in the order a path nests them.
ID_PARAMS = ("org_id", "project_id", "index_id", "profile_id", "session_id", "doc_id", "task_id", "key_id",
             "user_id", "profile_key", "suggestion_id", "suggest_key", "synonym_id", "rule_id")
# Routes under /v1 that take an id but are not an organization's, project's or index's (listed on purpose).
NOT_TENANT_IDS = {
    # a user's own sign-in session family; another user's is 404 (test below), a key is no user (403)
    ("DELETE", "/v1/auth/sessions/{family_id}"),
}
# The hot routes decide the index / handle after validating the body (see the module docstring).
VALID_BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/v1/projects/{project_id}/indices/{index_id}/search"): {"q": "phone"},
    ("POST", "/v1/search/{profile_key}"): {"q": "phone"},
    ("POST", "/v1/projects/{project_id}/indices/{index_id}/suggest"): {"q": "phone"},
    ("POST", "/v1/suggest/{suggest_key}"): {"q": "phone"},
    ("POST", "/v1/projects/{project_id}/indices/{index_id}/facet-values"): {"field": "brand", "q": "a"},
    ("POST", "/v1/search/{profile_key}/facet-values"): {"field": "brand", "q": "a"},
}
CALLERS = ("member", "admin", "read_key", "full_key", "read_key_scoped", "full_key_scoped")
CASES = ("other_org", "other_project", "other_index", "unknown")
PARAM = re.compile(r"{(\w+)(?::\w+)?}")


def v1_routes() -> list[tuple[str, str]]:
    """(method, path) of every API route under /v1, straight from ``app.routes`` (collection needs
    them before the fixtures' app exists; this app is never started)."""
    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(Settings(data_dir=Path(data_dir), secret_key="x" * 40))
        app.state.runtime.close()
    routes = []
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and context.path.startswith("/v1/"):
            routes.extend((method, context.path) for method in sorted(context.methods or ()) if method != "HEAD")
    return routes


ROUTES = v1_routes()
ROUTES_WITH_IDS = [r for r in ROUTES if PARAM.search(r[1]) and r not in NOT_TENANT_IDS]


@dataclass(frozen=True)
class Ids:
    org_id: str
    project_id: str
    index_id: str
    profile_id: str
    session_id: str
    doc_id: str
    task_id: str
    key_id: str
    user_id: str
    profile_key: str
    suggestion_id: str
    suggest_key: str
    synonym_id: str
    rule_id: str


@dataclass
class World:
    own: Ids
    foreign: dict[str, Ids]
    callers: dict[str, dict[str, str]]


def _key_id(client: Any, owner: Account, project_id: str) -> str:
    response = client.post(f"/v1/projects/{project_id}/api-keys", headers=owner.headers,
                           json={"type": "secret", "name": "matrix", "access": "read"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _populate(client: Any, owner: Account, project_id: str, full_key: str, name: str) -> Ids:
    """An index with a document, its upload task, a profile and an open replace session."""
    headers = bearer(full_key)
    base = f"/v1/projects/{project_id}/indices"
    response = client.post(base, json={"name": name, "mapping": PRODUCT_MAPPING}, headers=headers)
    assert response.status_code == 201, response.text
    index_id = response.json()["id"]
    doc_id = f"doc-{index_id}"
    response = client.post(f"{base}/{index_id}/documents", json=[{"id": doc_id, "name": "phone"}], headers=headers)
    assert response.status_code == 202, response.text
    task_id = response.json()["taskId"]
    assert wait_task(client, headers, project_id, task_id)["status"] == "succeeded"
    response = client.post(f"{base}/{index_id}/profiles", json={"name": "main"}, headers=headers)
    assert response.status_code == 201, response.text
    profile = response.json()
    suggest_key = client.get(f"{base}/{index_id}/suggestions/config", headers=headers).json()["suggestKey"]
    custom = client.post(f"{base}/{index_id}/suggestions/custom", json={"text": "phone"}, headers=headers)
    assert custom.status_code == 201, custom.text
    synonym = client.post(f"{base}/{index_id}/synonyms", json={"type": "multiway", "terms": ["a", "b"]},
                          headers=headers)
    assert synonym.status_code == 201, synonym.text
    rule = client.post(f"{base}/{index_id}/rules", json={"name": "r", "consequence": {"hide": ["x"]}}, headers=headers)
    assert rule.status_code == 201, rule.text
    response = client.post(f"{base}/{index_id}/replace-sessions", headers=headers)
    assert response.status_code == 201, response.text
    return Ids(synonym_id=synonym.json()["id"], rule_id=rule.json()["id"], org_id=owner.org_id, project_id=project_id, index_id=index_id, profile_id=profile["id"],
               session_id=response.json()["id"], doc_id=doc_id, task_id=task_id, key_id="", user_id=owner.user_id,
               profile_key=profile["profileKey"], suggestion_id=custom.json()["id"], suggest_key=suggest_key)


@pytest.fixture(scope="module")
def world(app) -> World:  # type: ignore[no-untyped-def]
    with StartedAppClient(app, raise_server_exceptions=False) as client:
        owner, stranger = make_account(app), make_account(app)
        mine, sibling, theirs = make_project(app, owner), make_project(app, owner), make_project(app, stranger)
        own_key, sibling_key, their_key = (make_key(app, p) for p in (mine, sibling, theirs))
        own = _populate(client, owner, mine, own_key, "first")
        own = replace(own, key_id=_key_id(client, owner, mine))
        second = replace(_populate(client, owner, mine, own_key, "second"), key_id=own.key_id)
        other_project = replace(_populate(client, owner, sibling, sibling_key, "first"),
                                key_id=_key_id(client, owner, sibling))
        other_org = replace(_populate(client, stranger, theirs, their_key, "first"),
                            key_id=_key_id(client, stranger, theirs))
    unknown = Ids(org_id="org_unknown0000", project_id="prj_unknown0000", index_id="idx_unknown0000",
                  profile_id="prf_unknown0000", session_id="rps_unknown0000", doc_id="no-such-doc",
                  task_id="tsk_unknown0000", key_id="key_unknown0000", user_id="usr_unknown0000",
                  profile_key="pk_unknown0000", suggestion_id="sug_unknown0000", suggest_key="sk_unknown0000",
                  synonym_id="syn_unknown0000", rule_id="rul_unknown0000")
    callers = {
        "member": add_member(app, owner, "member").headers,
        "admin": add_member(app, owner, "admin").headers,
        "read_key": bearer(make_key(app, mine, access="read")),
        "full_key": bearer(make_key(app, mine, access="full")),
        "read_key_scoped": bearer(make_key(app, mine, access="read", index_id=own.index_id)),
        "full_key_scoped": bearer(make_key(app, mine, access="full", index_id=own.index_id)),
    }
    foreign = {"other_org": other_org, "other_project": other_project, "other_index": second, "unknown": unknown}
    return World(own=own, foreign=foreign, callers=callers)


def _visible(caller: str, case: str, param: str) -> bool:
    """Whether the first foreign id of a path, ``param``, is one ``caller`` may legitimately reach
    from the caller's own parents before it (such paths are not this table's concern)."""
    session, scoped = caller in ("member", "admin"), caller.endswith("_scoped")
    if case == "other_project":  # the caller's organization: its sessions see the project (and its handles)
        return session and param in ("project_id", "profile_key", "suggest_key")
    if case == "other_index":  # the caller's project: only index-scoped keys are kept out of the other index
        return not scoped and param in ("index_id", "task_id", "profile_key", "suggest_key")
    return False


def foreign_paths(world: World, path: str, caller: str, case: str) -> list[str]:
    """The route's path with the case's ids from each depth on, the caller's own ids before it."""
    params = PARAM.findall(path)
    own, theirs = vars(world.own), vars(world.foreign[case])
    urls: list[str] = []
    for depth, param in enumerate(params):
        if theirs[param] == own[param] or _visible(caller, case, param):
            continue
        values = {name: (own[name] if i < depth else theirs[name]) for i, name in enumerate(params)}
        url = PARAM.sub(lambda match, values=values: values[match.group(1)], path)
        if url not in urls:
            urls.append(url)
    return urls


def test_every_route_with_an_id_is_in_the_table():
    assert len(ROUTES) > 50  # the enumeration sees the whole app, not one router
    unknown = {(m, p, name) for m, p in ROUTES_WITH_IDS for name in PARAM.findall(p) if name not in ID_PARAMS}
    assert unknown == set(), "a route takes an id this table does not know: add it to Ids and to the world"
    assert set(ROUTES) >= NOT_TENANT_IDS


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("method", "path"), ROUTES_WITH_IDS, ids=[f"{m} {p}" for m, p in ROUTES_WITH_IDS])
def test_ids_of_other_tenants_are_404_for_every_caller(world, client, method, path, case):
    body = VALID_BODIES.get((method, path))
    wrong: list[str] = []
    checked = 0
    for caller in CALLERS:
        for url in foreign_paths(world, path, caller, case):
            response = client.request(method, url, headers=world.callers[caller], json=body)
            checked += 1
            code = response.json().get("error", {}).get("code") if response.content else None
            if response.status_code != 404 or code != "NOT_FOUND":
                wrong.append(f"{caller} {method} {url} -> {response.status_code} {code}")
    assert wrong == []
    # every route has ids of another organization and unknown ids at every depth, for every caller
    if case in ("other_org", "unknown"):
        assert checked >= len(CALLERS) * len(PARAM.findall(path))


def test_another_users_session_family_is_404(app, client, world):
    """The one id under /v1 that is a user's, not a tenant's: another user's family is 404."""
    other = make_account(app)
    for caller in ("member", "admin"):
        response = client.delete(f"/v1/auth/sessions/{other.family_id}", headers=world.callers[caller])
        assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
    response = client.get("/v1/auth/sessions", headers=other.headers)
    assert [s["familyId"] for s in response.json()["items"]] == [other.family_id]  # still alive


# --------------------------------------------------------------------------- 403 once the ids are the caller's
def _code(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_403_still_answers_for_the_callers_own_ids(world, client):
    own, callers = world.own, world.callers
    index = f"/v1/projects/{own.project_id}/indices/{own.index_id}"
    assert _code(client.post(f"{index}/reindex", headers=callers["read_key"])) == (403, "FORBIDDEN")
    assert _code(client.post(f"{index}/reindex", headers=callers["read_key_scoped"])) == (403, "FORBIDDEN")
    assert _code(client.delete(f"{index}/profiles/{own.profile_id}", headers=callers["member"])) == (403, "FORBIDDEN")
    assert _code(client.delete(f"/v1/projects/{own.project_id}/api-keys/{own.key_id}",
                               headers=callers["full_key"])) == (403, "FORBIDDEN")
    assert _code(client.delete(f"/v1/orgs/{own.org_id}/members/{own.user_id}",
                               headers=callers["admin"])) == (403, "FORBIDDEN")
    assert _code(client.get(f"/v1/orgs/{own.org_id}", headers=callers["full_key"])) == (403, "FORBIDDEN")
    assert _code(client.post(f"/v1/search/{own.profile_key}", headers=callers["member"], json={})) == (403, "FORBIDDEN")


def test_a_read_key_on_a_write_route_of_another_index_is_404(world, client):
    """The issue's case: a read key scoped to index A on a write route of index B."""
    own, second = world.own, world.foreign["other_index"]
    url = f"/v1/projects/{own.project_id}/indices/{second.index_id}/documents"
    response = client.post(url, headers=world.callers["read_key_scoped"], json=[{"id": "x"}])
    assert _code(response) == (404, "NOT_FOUND")


@pytest.mark.parametrize("caller", ["member", "admin"])
def test_signed_in_user_connecting_an_integration_is_integration_key_only(world, client, caller):
    own = world.own
    body = {"platform": "shopify", "name": "My shop"}
    url = f"/v1/projects/{own.project_id}/indices/{own.index_id}/integration"
    assert _code(client.put(url, headers=world.callers[caller], json=body)) == (403, "INTEGRATION_KEY_ONLY")
    assert _code(client.put(url, headers=world.callers["read_key"], json=body)) == (403, "FORBIDDEN")
    theirs = world.foreign["other_org"]
    url = f"/v1/projects/{theirs.project_id}/indices/{theirs.index_id}/integration"
    assert _code(client.put(url, headers=world.callers[caller], json=body)) == (404, "NOT_FOUND")
