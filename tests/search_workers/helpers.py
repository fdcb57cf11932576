"""A small synthetic catalog, and feeding it to a host the way the control plane does."""

from __future__ import annotations

import gc
import random
import time
from typing import Any

from shared.contract import Change
from shared.routing import shard_for

MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True, "sortable": True},
        "price": {"type": "float", "filterable": True, "facetable": True, "sortable": True},
        "stock": {"type": "integer", "filterable": True, "sortable": True},
        "tags": {"type": "keyword[]", "filterable": True, "facetable": True},
    },
}

ADJ = ["red", "blue", "green", "black", "light", "heavy", "classic", "sport", "mini", "pro"]
NOUN = ["shoe", "jacket", "shirt", "boot", "sock", "hat", "bag", "glove"]
BRANDS = ["Acme", "Bolt", "Core", "Dune", "Echo", "Flux"]
TAGS = ["sale", "new", "eco", "kids", "gift"]


def make_docs(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        docs.append({
            "id": f"p{i:04d}",
            "title": f"{rng.choice(ADJ)} {rng.choice(ADJ)} {rng.choice(NOUN)}",
            "brand": rng.choice(BRANDS),
            "price": round(rng.uniform(1, 200), 2),
            "stock": rng.randint(0, 50),
            "tags": rng.sample(TAGS, rng.randint(0, 2)),
        })
    return docs


def upserts(docs: list[dict], first_seq: int = 1) -> list[Change]:
    """One change per document, in a global index sequence (as the documents table numbers them)."""
    return [Change(seq=first_seq + i, op="upsert", id=d["id"], doc=d) for i, d in enumerate(docs)]


def by_shard(changes: list[Change], shards: int) -> dict[int, list[Change]]:
    out: dict[int, list[Change]] = {s: [] for s in range(shards)}
    for c in changes:
        if c.op == "flush":
            for s in out:
                out[s].append(c)
        else:
            assert c.id is not None
            out[shard_for(c.id, shards)].append(c)
    return out


async def feed(host, index_id: str, generation: int, shards: int, changes: list[Change],
               after_seq: int) -> dict[int, list[int]]:
    """One task: ``changes`` (seq after_seq+1 ..) to every shard, and every shard advanced to the
    last one (also the shards that got none), as ``control_plane.shard.feed.catch_up`` does."""
    through = max([c.seq for c in changes], default=after_seq)
    out = {}
    for s, mine in by_shard(changes, shards).items():
        if not mine or mine[-1].seq < through:
            mine = [*mine, Change(seq=through, op="advance")]
        out[s] = await host.apply(index_id, generation, s, mine, after_seq=after_seq)
    return out


async def refeed(host, index_id: str, generation: int, shards: int, source: list[Change], target_seq: int) -> list:
    """The control plane's catch-up from the database (``source`` stands in for it)."""
    todo = await host.missing(index_id, generation, target_seq)
    per_shard = by_shard(source, shards)
    for s, from_seq in todo:
        mine = [c for c in per_shard[s] if c.seq > from_seq]
        if not mine or mine[-1].seq < target_seq:
            mine.append(Change(seq=target_seq, op="advance"))
        await host.apply(index_id, generation, s, mine, after_seq=from_seq)
    return todo


def release_ray_objects() -> None:
    """Before ``ray.shutdown()``: let go of actor handles and object refs while Ray still runs.
    Ray ends the process (exit code 1, no pytest summary) when one is released from another thread
    after shutdown, which a handle still referenced by a finished test's frame can do."""
    gc.collect()
    time.sleep(0.5)
    gc.collect()
