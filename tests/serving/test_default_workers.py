"""``serve``'s default number of serving processes: one per core; half the cores when searches go to
the shard actors (Ray mode without near replicas: the actors on the machine do the engine's work).
And when Ray mode has near replicas: by default with a local Ray, not when joining a cluster."""

from __future__ import annotations

import pytest

from cli.serve import default_workers
from shared.settings import Settings


@pytest.mark.parametrize(("actors_search", "cores", "expected"), [
    (False, 1, 1), (False, 2, 2), (False, 8, 8),
    (True, 1, 1), (True, 2, 1), (True, 3, 1), (True, 8, 4),
])
def test_default_workers(actors_search: bool, cores: int, expected: int) -> None:
    assert default_workers(actors_search, cores) == expected


@pytest.mark.parametrize(("address", "setting", "near"), [
    (None, None, False), (None, True, False),  # no Ray: the shards are in-process anyway
    ("local", None, True), ("local", False, False),
    ("ray://head:10001", None, False), ("ray://head:10001", True, True), ("auto", None, False),
])
def test_near_replicas(address: str | None, setting: bool | None, near: bool) -> None:
    assert Settings(ray_address=address, ray_near_replicas=setting).near_replicas is near
