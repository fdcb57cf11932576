"""ShardBridge.search with a host that has a fast path (Ray's ``search_here``): the fast answer is
used when there is one, the host loop's ``search`` otherwise, and both run where they should."""

from __future__ import annotations

import asyncio
import threading

import msgspec
import pytest

from control_plane.shard import ShardBridge, search_serving
from search_workers.host import BaseHost, ShardUnavailable
from shared.contract import Answer, Query, ShardSpec
from shared.errors import ErrorCode, ServiceError
from shared.settings import Settings
from tests.queries import Q


class FastPathHost(BaseHost):
    """A host whose fast path answers queries with a non-empty ``q`` and declines the others."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, str]] = []  # (method, q, thread)

    async def search_here(self, index_id: str, generation: int, query: Query) -> Answer | None:
        self.calls.append(("search_here", query.q, threading.current_thread().name))
        return Answer(total=1) if query.q else None

    async def search(self, index_id: str, generation: int, query: Query) -> Answer:
        self.calls.append(("search", query.q, threading.current_thread().name))
        return Answer(total=2)


async def test_bridge_uses_the_fast_path_and_falls_back_to_the_host_loop(tmp_path):
    host = FastPathHost()
    bridge = ShardBridge(Settings(data_dir=tmp_path), host)
    try:
        here = threading.current_thread().name
        assert (await bridge.search("idx", 1, Q({"q": "red"}))).total == 1
        assert host.calls == [("search_here", "red", here)]  # on the caller's loop, nothing else
        host.calls.clear()
        assert (await bridge.search("idx", 1, Q({"q": ""}))).total == 2
        assert host.calls == [("search_here", "", here), ("search", "", "shard-host-loop")]
        # from another loop (another thread) too
        host.calls.clear()
        assert await asyncio.to_thread(lambda: asyncio.run(bridge.search("idx", 1, Q({"q": "x"})))) == Answer(total=1)
        assert [c[0] for c in host.calls] == ["search_here"] and host.calls[0][2] != here
    finally:
        bridge.close()


class Gate:
    """A follower's gate that says yes for the generations in ``caught_up``."""

    def __init__(self) -> None:
        self.caught_up: set[tuple[str, int]] = set()

    def searchable(self, index_id: str, generation: int) -> bool:
        return (index_id, generation) in self.caught_up

    async def wait(self, index_id: str, generation: int) -> None:
        return None


async def test_near_replicas_answer_what_they_caught_up_with_and_the_actors_the_rest(tmp_path):
    """Ray mode with near replicas: a generation the follower caught up with is searched in this
    process's memory; one it has not (starting, behind, lease lapsed) on the host (the actors)."""
    actors, in_memory = FastPathHost(), FastPathHost()
    settings = Settings(data_dir=tmp_path)
    bridge, near = ShardBridge(settings, actors), ShardBridge(settings, in_memory, durable=False)
    gate = Gate()
    near.gate, bridge.near = gate, near
    try:
        assert (await bridge.search("idx", 1, Q({"q": "red"}))).total == 1
        assert [c[0] for c in actors.calls] == ["search_here"] and in_memory.calls == []
        actors.calls.clear()
        gate.caught_up.add(("idx", 1))
        assert (await bridge.search("idx", 1, Q({"q": "red"}))).total == 1
        assert (await bridge.search("idx", 2, Q({"q": "red"}))).total == 1  # another generation: not caught up
        assert [c[:2] for c in in_memory.calls] == [("search_here", "red")]
        assert [c[:2] for c in actors.calls] == [("search_here", "red")]
    finally:
        bridge.close()
        near.close()


class DownHost(BaseHost):
    """A host whose replicas of generation 1 never answer (it already retried them); generation 2 answers."""

    def __init__(self) -> None:
        super().__init__()
        self.generations: list[int] = []

    async def search(self, index_id: str, generation: int, query: Query) -> Answer:
        self.generations.append(generation)
        if generation == 1:
            raise ShardUnavailable("no replica of shard 0 answered")
        return Answer(total=3)


async def test_unreachable_shards_answer_503_after_one_retry_window_not_three(tmp_path):
    """The host retries a shard's replicas for its whole retry window; the search does not start
    that again on the same generation (a search of dead actors answered 503 after 3 x 15 s). A
    generation swapped meanwhile is still searched."""
    host = DownHost()
    bridge = ShardBridge(Settings(data_dir=tmp_path), host)
    spec = ShardSpec("idx", 1, 1, 1, {"idField": "id", "fields": {}}, "en")

    async def same() -> ShardSpec:
        return spec

    async def swapped() -> ShardSpec:
        return msgspec.structs.replace(spec, generation=2)

    try:
        with pytest.raises(ServiceError) as err:
            await search_serving(bridge, spec, Q({"q": "red"}), same)
        assert err.value.code == ErrorCode.UNAVAILABLE
        assert host.generations == [1]
        host.generations.clear()
        assert (await search_serving(bridge, spec, Q({"q": "red"}), swapped)).total == 3
        assert host.generations == [1, 2]
    finally:
        bridge.close()
