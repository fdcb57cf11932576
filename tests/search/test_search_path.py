"""The path of a storefront search through our code, traced as it runs (issue 28): from the route
down to the engine it goes through one short chain of files (route, door, search service, shard
bridge, host, replica, engine), and no call chain ever comes back into a file it already left
(A -> B -> A is a tie running the wrong way). ``benchmarks``-style figures of the whole call tree
are in docs/architecture.md."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from control_plane.app import create_app
from control_plane.migrate import upgrade
from tests.conftest import make_settings
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient, started
from tests.fixtures.server import scratch_pg_database
from tests.index.helpers import create_index, make_tenant, products, upload

ROOT = Path(__file__).resolve().parents[2]
OURS = tuple(str(ROOT / p) + "/" for p in ("control_plane", "search_workers", "shared"))
ORIGIN = "https://shop.example.com"
ROUTE = "control_plane/storefront/endpoints.py"
ENGINE = "search_workers/engine/search.py"


class Trace:
    """A profile function for every thread the app starts; it records only while ``on``: each call
    into our files with the chain of our files above it (outermost first, a file once per stay)."""

    def __init__(self) -> None:
        self.on = False
        self.chains: dict[int, set[tuple[str, ...]]] = {}

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if not self.on or event != "call" or not frame.f_code.co_filename.startswith(OURS):
            return
        chain: list[str] = []
        at: FrameType | None = frame
        while at is not None:
            name = at.f_code.co_filename
            if name.startswith(OURS):
                short = str(Path(name).relative_to(ROOT))
                if not chain or chain[-1] != short:
                    chain.append(short)
            at = at.f_back
        self.chains.setdefault(threading.get_ident(), set()).add(tuple(reversed(chain)))

    def path(self) -> list[tuple[str, ...]]:
        """The chains from the route down: in the request's thread only those under the route (not
        the middleware around it); in the threads it hands work to (engine, database), all."""
        out = []
        for chains in self.chains.values():
            if any(ROUTE in chain for chain in chains):
                out += [chain[chain.index(ROUTE):] for chain in chains if ROUTE in chain]
            else:
                out += chains
        return out


@contextmanager
def traced_app(backend: str, tmp_path: Path, mailbox: Any) -> Iterator[tuple[Any, Trace]]:
    """An app of its own, started after the profile function is set for new threads: the event
    loop's, the shard host's and the worker threads all carry it."""
    trace = Trace()
    with scratch_pg_database("shopsearch_path") if backend == "postgres" else _nothing() as name:
        pg_url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}" if name else None
        settings = make_settings(backend, tmp_path, mailbox, pg_url)
        upgrade(settings)
        threading.setprofile(trace)
        try:
            with started(create_app(settings)) as application:
                yield application, trace
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_storefront_search_passes_few_files_and_none_twice_on_the_way_down(backend, tmp_path, mailbox):
    with traced_app(backend, tmp_path, mailbox) as (app, trace), \
            StartedAppClient(app, raise_server_exceptions=False) as client:
        tenant = make_tenant(app)
        index = create_index(client, tenant)
        upload(client, tenant, index["id"], products(40))
        web = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers, json={
            "name": "web", "queryFields": {"name": {"weight": 1}}, "facets": ["brand", "tags"], "perPage": 5,
            "retrieve": ["name", "brand"]}).json()
        public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
        url, headers = f"/v1/search/{web['profileKey']}", {**bearer(public), "Origin": ORIGIN}
        warm = client.post(url, json={"q": "product"}, headers=headers)  # the profile resolved once
        assert warm.status_code == 200, warm.text
        trace.on = True
        answer = client.post(url, json={"q": "products", "filters": {"brand": "Acme"}}, headers=headers)
        trace.on = False
    assert answer.status_code == 200 and answer.json()["total"] > 0, answer.text
    chains = trace.path()
    files = {file for chain in chains for file in chain}
    assert ROUTE in files and ENGINE in files, sorted(files)
    twice = sorted({chain for chain in chains if len(set(chain)) < len(chain)})
    assert not twice, twice
    # the way down, the same for every call that reaches the engine: route, door, search service,
    # shard bridge, host, replica, engine (its stages one step further)
    spines = {chain[: chain.index(ENGINE) + 1] for chain in chains if ENGINE in chain and ROUTE in chain}
    assert len(spines) == 1, spines
    spine = spines.pop()
    assert len(spine) <= 10, spine
    assert spine[:3] == (ROUTE, "control_plane/door/service.py", "control_plane/search/service.py"), spine
