"""What one serving process keeps after generations replace each other (issue 34 item 2), engine only.

    python -m benchmarks.generations_memory [--docs 50000] [--generations 4]

One shard's engine in memory (no files, no server) fed ``--docs`` products of the recombined Best
Buy catalog with the storefront mapping, in pages of 500 as a catch-up feeds it. Two sequences:

* **one at a time**: build a generation, drop it, build the next (what memory returns when no
  generation overlaps another);
* **overlapping**, as a reindex does: build generation N+1 while N is alive, then drop N, then pack
  N+1's postings (``ShardEngine.settle``, what ``LocalHost.drop`` does after dropping N).

After each step the process's RSS, glibc's heap as it sees it (``mallinfo2``: in use, free inside its
arenas, in separate mmaps) and pymalloc's blocks. Dropping calls what the hosts call
(``search_workers.memory.release_freed_memory``: a collection, then ``malloc_trim(0)``).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from typing import Any

import psutil

from benchmarks.common import STOREFRONT_MAPPING, expand
from search_workers.engine.shard import ShardEngine
from search_workers.memory import release_freed_memory
from shared.contract import Change

MiB = 2**20


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mallinfo() -> MallInfo2 | None:
    try:
        call = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    call.restype = MallInfo2
    info: MallInfo2 = call()
    return info


def line(tag: str, base: float) -> str:
    rss = psutil.Process().memory_info().rss / MiB
    text = f"{tag:34s} RSS {rss:6.0f} MiB (+{rss - base:4.0f})"
    info = _mallinfo()
    if info is not None:
        text += (f"  malloc: in use {info.uordblks / MiB:4.0f}, free in arenas {info.fordblks / MiB:4.0f}, "
                 f"mmapped {info.hblkhd / MiB:3.0f}")
    return text + f"  pymalloc blocks {sys.getallocatedblocks():,}"


def build(docs: list[dict[str, Any]]) -> ShardEngine:
    engine = ShardEngine("/nonexistent-memory-only", STOREFRONT_MAPPING, durable=False)
    seq = 0
    for start in range(0, len(docs), 500):
        changes = []
        for doc in docs[start:start + 500]:
            seq += 1
            changes.append(Change(seq=seq, op="upsert", id=str(doc["id"]), doc=doc))
        engine.apply(changes)
    return engine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--generations", type=int, default=4)
    args = parser.parse_args()
    docs = expand(args.docs)
    release_freed_memory()
    base = psutil.Process().memory_info().rss / MiB
    print(line("catalog loaded", base))
    print("== one at a time")
    for n in range(1, args.generations + 1):
        engine = build(docs)
        print(line(f"generation {n} built", base))
        engine.close()
        del engine
        release_freed_memory()
        print(line(f"generation {n} dropped", base))
    print("== overlapping (a reindex)")
    current = build(docs)
    release_freed_memory()
    print(line("generation 1", base))
    for n in range(2, args.generations + 1):
        following = build(docs)
        print(line(f"generation {n} built beside {n - 1}", base))
        current.close()
        current = following
        del following
        release_freed_memory()
        print(line(f"generation {n - 1} dropped", base))
        current._mem.settle()
        release_freed_memory()
        print(line(f"generation {n} settled", base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
