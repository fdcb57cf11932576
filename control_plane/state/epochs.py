"""Per-index change epochs: bumped whenever what a search answers could change.

The task runner bumps an index's epoch once shards reflect a task; configuration changes
(profiles, synonyms, rules, facets, plans) bump it too. Answer caches and resolved-profile caches
key on the epoch, so no stale answer outlives a change, in every process that shares the state.

While Redis is unreachable an epoch cannot be known: :meth:`Epochs.current` then answers a number
that no cache holds (negative, never repeated), so every search resolves and computes afresh and
nothing is cached under it (:func:`uncached_epoch`); a bump is kept and replayed when Redis is back.
"""

from __future__ import annotations

import itertools

from sqlalchemy.orm import Session

from control_plane.db import after_commit
from control_plane.state.base import SharedState, SharedStateUnavailable

_uncached = itertools.count(1)


def uncached_epoch(epoch: int) -> bool:
    """An epoch read while Redis was unreachable: answers computed under it must not be cached."""
    return epoch < 0


def _key(index_id: str) -> str:
    return f"epoch:index:{index_id}"


class Epochs:
    def __init__(self, state: SharedState) -> None:
        self.state = state

    def current(self, index_id: str) -> int:
        try:
            value = self.state.get_pushed(_key(index_id))
        except SharedStateUnavailable:
            return -next(_uncached)
        return int(value) if value else 0

    def bump(self, index_id: str) -> int | None:
        """The new epoch, or None when Redis is unreachable (the bump is replayed when it is back)."""
        return self.state.incr_eventually(_key(index_id))

    def bump_after_commit(self, db: Session, index_id: str) -> None:
        """Bump the index's epoch once the request's transaction has committed: a search resolving in
        between must read the change under the new epoch, never cache the old under it."""
        after_commit(db, lambda: self.bump(index_id))
