"""A shard's in-memory structures saved at close, so a restart does not rebuild them.

Rebuilding a :class:`MemIndex` re-reads and re-analyses every stored document (about 10 s per
50,000 documents on the development machine). When a shard closes cleanly, every applied change
is on disk, so the structures are pickled beside the Whoosh files, tagged with the applied
sequence, the mapping and the language. Opening uses them only when all three still match what
Whoosh holds; anything else (a crash after more changes, a mapping change, an older format, an
unreadable file) falls back to the rebuild. The file is ours, in our data directory: it is
trusted like the Whoosh files beside it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
from typing import Any

from .memindex import MemIndex

log = logging.getLogger("shopsearch.engine")

FILE = "memory.snapshot"
FORMAT = 1
# rebuilt on demand, or tied to this process: never saved
_TRANSIENT = ("fields", "analyzer", "expansion_cache", "_slot_pos", "_kw_rank")


def save(path: str, mem: MemIndex, seq: int, mapping: dict, language: str) -> None:
    """Write the snapshot atomically (a temporary file renamed over the old one)."""
    state = {k: v for k, v in vars(mem).items() if k not in _TRANSIENT}
    header = {"format": FORMAT, "seq": seq, "mapping": mapping, "language": language}
    target = os.path.join(path, FILE)
    tmp = target + ".tmp"
    try:
        with open(tmp, "wb") as fh:
            pickle.dump(header, fh, protocol=5)
            pickle.dump(state, fh, protocol=5)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError:
        log.warning("could not save the memory snapshot of %s", path, exc_info=True)
        discard(path)


def load(path: str, mem: MemIndex, seq: int, mapping: dict, language: str) -> bool:
    """Fill ``mem`` from the snapshot if it was taken at ``seq`` with this mapping and language."""
    target = os.path.join(path, FILE)
    if not os.path.exists(target):
        return False
    try:
        with open(target, "rb") as fh:
            header = pickle.load(fh)
            if header != {"format": FORMAT, "seq": seq, "mapping": mapping, "language": language}:
                return False
            state: dict[str, Any] = pickle.load(fh)
    except Exception:  # noqa: BLE001 - a damaged snapshot only costs the rebuild
        log.warning("ignoring an unreadable memory snapshot in %s", path, exc_info=True)
        return False
    vars(mem).update(state)
    return True


def discard(path: str) -> None:
    for name in (FILE, FILE + ".tmp"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(path, name))
