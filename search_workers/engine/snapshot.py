"""A shard's in-memory structures saved at close, so a restart does not rebuild them.

Rebuilding a :class:`MemIndex` re-reads and re-analyses every stored document (about 10 s per
50,000 documents on the development machine). When a shard closes cleanly, every applied change
is on disk, so the structures are pickled beside the Whoosh files, tagged with the applied
sequence, the mapping, the language and a hash of the code that builds them. Opening uses them
only when all of it matches what Whoosh holds and what is asked for, and removes the file once
read; anything else (a crash after more changes, a mapping change, other code, an unreadable
file) falls back to the rebuild. A shard with many deleted documents or dead terms saves none,
so it is rebuilt clean. The file is ours, in our data directory: trusted like the Whoosh files.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import pickle
from pathlib import Path
from typing import Any

from . import analysis, blobs, memindex, values, vectors
from .memindex import MemIndex

log = logging.getLogger("shopsearch.engine")

FILE = "memory.snapshot"
# worn-out dictionaries are rebuilt rather than carried across restarts (a rebuild drops the terms
# and deletion keys of documents that are gone; a snapshot would keep them for ever)
MAX_DEAD_SHARE = 0.2


def _code_version() -> str:
    """Structures built by other analysis or index code are not reused: the sources are hashed."""
    digest = hashlib.blake2b(digest_size=12)
    for module in (analysis, blobs, memindex, values, vectors):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()


FORMAT = _code_version()
# rebuilt on demand, or tied to this process: never saved
_TRANSIENT = ("fields", "analyzer", "field_an", "expansion_cache", "_slot_pos", "_kw_rank", "_kw_sorted",
              "_kw_buf", "_kw_by_value", "tf_norms")  # kw_ps/kw_po are saved exact; the spare room behind them is not


def worn(mem: MemIndex) -> bool:
    """Many deleted documents or dead terms: better rebuilt from the stored documents."""
    dead_slots = mem.n - mem.n_live
    dead_terms = sum(1 for df in mem.term_df.values() if df <= 0)
    return dead_slots > MAX_DEAD_SHARE * max(mem.n, 1) or dead_terms > MAX_DEAD_SHARE * max(len(mem.term_df), 1)


def save(path: str, mem: MemIndex, seq: int, mapping: dict, language: str) -> None:
    """Write the snapshot atomically (a temporary file renamed over the old one); a worn shard
    gets none, so its next open rebuilds it clean."""
    if worn(mem):
        discard(path)
        return
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
    """Fill ``mem`` from the snapshot if it was taken at ``seq`` with this mapping, language and
    code. The file is removed once read: from now on only a clean close vouches for the state."""
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
    discard(path)
    return True


def discard(path: str) -> None:
    for name in (FILE, FILE + ".tmp"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(path, name))
