"""A serving process's search state: resolved searches by key, compiled merchandising, the answer
cache and the event buffer (held by the runtime, used by :mod:`control_plane.search.service`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from control_plane.index.models import Index
from control_plane.profile.schemas import ProfileSettings
from control_plane.search.cache import AnswerCache
from control_plane.search.events import SearchEvents
from control_plane.search.merchandising import EMPTY, Merch, MerchCache


@dataclass(frozen=True)
class Resolved:
    """What a search needs of its index and profile, detached from the database."""

    index: Index
    settings: ProfileSettings
    profile_id: str | None
    profile_version: str
    epoch: int
    searches_per_second: int
    merch: Merch = EMPTY

    @property
    def project_id(self) -> str:
        return self.index.project_id


class Resolutions:
    """Resolved searches by key, each checked against its index's epoch by the caller."""

    def __init__(self) -> None:
        self._items: dict[Any, Resolved] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Resolved | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: Any, resolved: Resolved) -> None:
        with self._lock:
            if len(self._items) > 50_000:
                self._items.clear()
            self._items[key] = resolved


class SearchRuntime:
    """Per-process search state: caches and the event buffer.

    Storefront handles and secret-route resolutions live apart: a handle comes from a URL, so it
    must never be able to name a secret-route entry (which carries no profile restrictions)."""

    def __init__(self, answers: AnswerCache) -> None:
        self.answers = answers
        self.merch = MerchCache()  # compiled synonyms and rules per index
        self.events = SearchEvents()
        self.storefront = Resolutions()  # by profile handle
        self.secret = Resolutions()  # by (index id, profile key or None)
