"""A shop per backend and module (``tests.analytics.helpers.open_shop``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.analytics.helpers import Shop, open_shop


@pytest.fixture(scope="module")
def shop(app: Any) -> Iterator[Shop]:
    with open_shop(app) as value:
        yield value
