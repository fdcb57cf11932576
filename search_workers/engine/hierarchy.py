"""Category trees: a ``keyword[]`` field whose values are paths (``"Cell Phones > iPhone"``).

A node counts the documents holding its path or any path below it, each document once (one holding
both ``"A > B"`` and ``"A > C"`` is one document under ``"A"``). A filter on the field names paths
and matches the documents holding a path or any path below it (:func:`descendant_ords`).

The levels of the field's dictionary (append-only) are worked out once per dictionary size: per
value ordinal, the node of each level it lies under.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .memindex import MemIndex


@dataclass(frozen=True)
class Levels:
    """Nodes per level: ``paths[level]`` (node id -> path), ``node_at[level]`` (value ordinal ->
    node id at that level, -1 when the value is shallower), ``ids[level]`` (path -> node id)."""

    paths: list[list[str]]
    node_at: list[np.ndarray]
    ids: list[dict[str, int]]


def levels_of(values: Sequence[str], separator: str) -> Levels:
    paths: list[list[str]] = []
    ids: list[dict[str, int]] = []
    columns: list[list[int]] = []
    for ordinal, value in enumerate(values):
        parts = [p.strip() for p in value.split(separator)]
        for level in range(len(parts)):
            if level == len(paths):
                paths.append([])
                ids.append({})
                columns.append([-1] * len(values))
            path = separator.join(parts[: level + 1])
            node = ids[level].get(path)
            if node is None:
                node = ids[level][path] = len(paths[level])
                paths[level].append(path)
            columns[level][ordinal] = node
    return Levels(paths, [np.asarray(c, dtype=np.int64) for c in columns], ids)


class Hierarchies:
    """The levels of a shard's hierarchical fields, cached while their dictionaries keep their size."""

    def __init__(self, mem: MemIndex) -> None:
        self.mem = mem
        self._levels: dict[tuple[str, str], tuple[int, Levels]] = {}

    def levels(self, field: str, separator: str) -> Levels:
        values = self.mem.kw_vals[field]
        hit = self._levels.get((field, separator))
        if hit is not None and hit[0] == len(values):
            return hit[1]
        built = levels_of(values, separator)
        self._levels[(field, separator)] = (len(values), built)
        return built

    def counts(self, field: str, separator: str, expand: Sequence[str], docs: np.ndarray) -> dict[str, int]:
        """``{path: documents}`` among ``docs`` (sorted slots) for every node of level 0 and every
        child of a path in ``expand``; nodes without documents are left out."""
        mem = self.mem
        levels = self.levels(field, separator)
        if not levels.paths or not len(docs):
            return {}
        ps, po = mem.kw_ps[field], mem.kw_po[field]
        held = np.zeros(mem.n, dtype=bool)
        held[docs] = True
        sel = held[ps]
        slots, ords = ps[sel].astype(np.int64), po[sel]
        wanted: dict[int, set[int] | None] = {0: None}  # level -> parents whose children count (None: all)
        for path in expand:
            level = path.count(separator)
            node = levels.ids[level].get(path) if level < len(levels.ids) else None
            if node is not None and level + 1 < len(levels.paths):
                parents = wanted.setdefault(level + 1, set())
                if parents is not None:
                    parents.add(node)
        out: dict[str, int] = {}
        for level, parents in sorted(wanted.items()):
            nodes = levels.node_at[level][ords]
            keep = nodes >= 0
            width = len(levels.paths[level])
            # one (document, node) pair per document and node: a document counts once per node
            pairs = np.unique(slots[keep] * width + nodes[keep])
            counts = np.bincount(pairs % width, minlength=width)
            names = levels.paths[level]
            for node in np.flatnonzero(counts).tolist():
                path = names[node]
                if parents is None or levels.ids[level - 1].get(path.rpartition(separator)[0]) in parents:
                    out[path] = int(counts[node])
        return out


def descendant_ords(mem: MemIndex, field: str, separator: str, paths: Sequence[str]) -> np.ndarray:
    """Ordinals of the values that are one of ``paths`` or below one (two binary searches each in
    the sorted dictionary)."""
    ordered, ords = mem.kw_sorted(field)
    found: list[np.ndarray] = []
    for path in paths:
        exact = bisect.bisect_left(ordered, path)
        if exact < len(ordered) and ordered[exact] == path:
            found.append(ords[exact: exact + 1])
        below = path + separator
        lo = bisect.bisect_left(ordered, below)
        hi = bisect.bisect_left(ordered, below + "\U0010ffff")
        if lo < hi:
            found.append(ords[lo:hi])
    return np.unique(np.concatenate(found)) if found else ords[:0]
