"""Giving a dropped generation's memory back to the machine.

A shard's columns and postings are numpy arrays and Python objects by the million; when a
generation is dropped they are freed, but glibc's allocator keeps the freed pages in its arenas
(the serving process kept its peak, about twice the catalog's memory, after every reindex).
``malloc_trim(0)`` returns the free pages of every arena to the system. Elsewhere than glibc it
does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc


def _load_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _load_trim()


def release_freed_memory() -> None:
    """Collect cycles, then hand the allocator's free pages back (blocking: run it off the loop)."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
