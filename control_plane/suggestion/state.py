"""What each serving process keeps of every index's suggestions (filled by :mod:`.serving`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from control_plane.search.state import Resolved
from control_plane.suggestion.matcher import SuggestionIndex
from control_plane.suggestion.schemas import SuggestionSettings


@dataclass(frozen=True)
class Loaded:
    index_id: str
    project_id: str
    suggest_key: str | None
    settings: SuggestionSettings
    matcher: SuggestionIndex
    version: tuple[Any, ...]  # what the matcher was built from
    epoch: int
    searches_per_second: int


class SuggestState:
    def __init__(self) -> None:
        self.by_index: dict[str, Loaded] = {}
        self.key_to_index: dict[str, str] = {}
        self.locks: dict[str, threading.Lock] = {}
        self.default_products: dict[str, Resolved] = {}  # products searched with the default settings
        self.lock = threading.Lock()

    def index_lock(self, index_id: str) -> threading.Lock:
        with self.lock:
            lock = self.locks.get(index_id)
            if lock is None:
                lock = self.locks[index_id] = threading.Lock()
            return lock
