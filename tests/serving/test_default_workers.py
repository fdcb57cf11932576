"""``serve``'s default number of serving processes: one per core, half the cores in Ray mode (the
shard actors on the machine do the engine's work)."""

from __future__ import annotations

import pytest

from cli.serve import default_workers


@pytest.mark.parametrize(("ray", "cores", "expected"), [
    (False, 1, 1), (False, 2, 2), (False, 8, 8),
    (True, 1, 1), (True, 2, 1), (True, 3, 1), (True, 8, 4),
])
def test_default_workers(ray: bool, cores: int, expected: int) -> None:
    assert default_workers(ray, cores) == expected
