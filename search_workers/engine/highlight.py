"""Stage 5 of a shard's search: the page's hits, their documents decoded, cut to the fields asked
for, and the query's words highlighted."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from shared.contract import Hit, Query

from .analysis import CHUNK_RE
from .errors import Deadline
from .memindex import MemIndex
from .ranking import SortFn
from .values import text_of

DECODE_BYTES_PER_SECOND = 200e6  # orjson on a slow core, for deadline checks

#: characters of a field value highlighted: the rest of a longer value is left out of the highlight
HIGHLIGHT_MAX_CHARS = 10_000


def highlight_text(idx: MemIndex, value: Any, terms: set[str], fname: str | None = None,
                   seen: dict[str, bool] | None = None) -> str:
    """``value`` with the chunks holding any of ``terms`` in ``<em>``, analysed as field ``fname``.

    ``seen``: chunk -> highlighted, shared by the hits of one query and field (product names
    repeat their words: most chunks are then one dict lookup)."""
    text = text_of(value) if not isinstance(value, list) else ", ".join(text_of(v) for v in value)
    text = text[:HIGHLIGHT_MAX_CHARS]  # a 9 MB description took 3.7 s to highlight
    an = idx.field_an.get(fname, idx.analyzer) if fname is not None else idx.analyzer
    if seen is None:
        seen = {}
    out: list[str] = []
    pos = 0
    end = 0
    for chunk in CHUNK_RE.findall(text):  # (half the time of finditer's match objects)
        # what lies between two chunks can't start one: the next occurrence is the chunk
        start = text.find(chunk, end)
        end = start + len(chunk)
        hit = seen.get(chunk)
        if hit is None:
            hit = seen[chunk] = not terms.isdisjoint(an.chunk_terms(chunk))
        if hit:
            out.append(text[pos:start])
            out.append("<em>")
            out.append(chunk)
            out.append("</em>")
            pos = end
    if not out:
        return html.escape(text, quote=False)
    out.append(text[pos:])
    if "&" in text or "<" in text or ">" in text:  # (escaping is per character, so per piece)
        out = [x if i % 4 in (1, 3) else html.escape(x, quote=False) for i, x in enumerate(out)]
    return "".join(out)


def page_hits(mem: MemIndex, query: Query, slots: np.ndarray, scores: np.ndarray, sort_keys: list[SortFn],
              matched_terms: set[str], id_field: str, hidden: frozenset[str], deadline: Deadline) -> list[Hit]:
    """The hits of ``slots``: each document decoded, cut to the fields the query retrieves (never
    the ``hidden`` ones), its highlighted fields and its sort values."""
    hl_fields = [f for f in query.highlight if f not in hidden]
    keep = None if query.retrieve is None else (set(query.retrieve) | {id_field}) - hidden
    seen: dict[str, dict[str, bool]] = {f: {} for f in hl_fields}  # per field: chunk -> highlighted
    out: list[Hit] = []
    for slot, slot_score in zip(slots.tolist(), scores.tolist(), strict=True):
        # decoding a document holds the GIL throughout (~30 ms for 9 MB): not started when it
        # would end past the deadline (an event-loop attempt goes to a thread instead)
        deadline.check(mem.blobs.size(slot) / DECODE_BYTES_PER_SECOND)
        doc = mem.document(slot) or {}
        hl: dict[str, str] = {}
        for f in hl_fields:
            v = doc.get(f)
            if v is not None:
                hl[f] = highlight_text(mem, v, matched_terms, f, seen[f])
        if keep is not None:
            out_doc = {k: v for k, v in doc.items() if k in keep}
        else:
            out_doc = {k: v for k, v in doc.items() if k not in hidden} if hidden else doc
        sv = [val(slot) for _, val in sort_keys] + [slot_score]
        out.append(Hit(id=mem.ids[slot], score=slot_score, document=out_doc, highlights=hl, sort_values=sv))
    return out
