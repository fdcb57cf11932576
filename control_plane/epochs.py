"""Per-index change epochs: bumped whenever what a search answers could change.

The task runner bumps an index's epoch once shards reflect a task; configuration changes
(profiles, synonyms, rules, facets) bump it too. Answer caches and resolved-profile caches key on
the epoch, so no stale answer outlives a change — on every API instance when Redis is configured.
"""

from __future__ import annotations

from control_plane.sharedstate import SharedState


def _key(index_id: str) -> str:
    return f"epoch:index:{index_id}"


def index_epoch(state: SharedState, index_id: str) -> int:
    value = state.get(_key(index_id))
    return int(value) if value else 0


def bump_index_epoch(state: SharedState, index_id: str) -> int:
    return state.incr(_key(index_id))
