"""The analytics store: counts aggregated in memory, keyed like the rows
``control_plane.analytics.repository.write`` adds them to (every process adds what it counted;
several processes sum up without reading first)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from control_plane.analytics.query_ids import QueryRef, normalize_query, query_hash

MAX_QUERY_CHARS = 200
QUERY_COUNTERS = ("searches", "no_results", "hits", "clicks", "conversions", "positioned_clicks", "position_sum")
CLIENT_BITS = 63  # of a signed 64-bit column: every set stays positive


def client_bit(client: str) -> int:
    """The bit of ``analytics_queries.clients`` a client sets (0 when the client is unknown)."""
    if not client:
        return 0
    return 1 << int.from_bytes(hashlib.blake2b(client.encode(), digest_size=8).digest(), "big") % CLIENT_BITS


def client_count(clients: int) -> int:
    """Distinct clients a set shows (fewer when two clients share a bit)."""
    return int(clients).bit_count()


def today() -> date:
    return datetime.now(UTC).date()


def _day_of(at: Any) -> date:
    if isinstance(at, str) and len(at) >= 10:
        try:
            return date.fromisoformat(at[:10])
        except ValueError:
            pass
    return today()


@dataclass
class Aggregate:
    """Counts of a batch of events, keyed like the rows they are added to."""

    # (index, day, query hash) -> [query text, searches, no_results, hits, clicks, conversions,
    #                              positioned_clicks, position_sum, clients (a bit set, OR-ed)]
    queries: dict[tuple[str, date, str], list[Any]] = field(default_factory=dict)
    suggests: dict[tuple[str, date], int] = field(default_factory=dict)
    documents: dict[tuple[str, date, str], list[int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.queries) + len(self.suggests) + len(self.documents)

    def _query_row(self, index_id: str, day: date, qhash: str, text: str) -> list[Any]:
        row = self.queries.get((index_id, day, qhash))
        if row is None:
            row = self.queries[(index_id, day, qhash)] = [text, 0, 0, 0, 0, 0, 0, 0, 0]
        return row

    def add_search(self, index_id: str, day: date, q: str, total: int, client: str = "") -> None:
        normalized = normalize_query(q.replace("\x00", " "))  # PostgreSQL text holds no NUL
        row = self._query_row(index_id, day, query_hash(normalized), normalized[:MAX_QUERY_CHARS])
        row[1] += 1
        row[2] += total == 0
        row[3] += max(0, int(total))
        row[8] |= client_bit(client)

    def add_suggest(self, index_id: str, day: date, count: int = 1) -> None:
        key = (index_id, day)
        self.suggests[key] = self.suggests.get(key, 0) + count

    def add_event(self, ref: QueryRef, kind: str, document_id: str, position: int | None) -> None:
        """A click or conversion on the search ``ref`` names (its query text is already stored:
        the row is created by the search; an empty text only if the click is flushed first)."""
        row = self._query_row(ref.index_id, ref.day, ref.query_hash, "")
        doc = self.documents.get((ref.index_id, ref.day, document_id))
        if doc is None:
            doc = self.documents[(ref.index_id, ref.day, document_id)] = [0, 0]
        if kind == "click":
            row[4] += 1
            doc[0] += 1
            if position is not None:
                row[6] += 1
                row[7] += position
        else:
            row[5] += 1
            doc[1] += 1

    def add_search_events(self, batch: Iterable[Mapping[str, Any]]) -> None:
        """Events of ``control_plane.search.events``: ``search`` and ``suggest`` are counted."""
        for event in batch:
            kind = event.get("type")
            index_id = event.get("indexId")
            if not isinstance(index_id, str):
                continue
            if kind == "search":
                self.add_search(index_id, _day_of(event.get("at")), str(event.get("q") or ""),
                                int(event.get("total") or 0), str(event.get("client") or ""))
            elif kind == "suggest":
                self.add_suggest(index_id, _day_of(event.get("at")))

    def merge(self, other: Aggregate) -> None:
        for key, row in other.queries.items():
            mine = self._query_row(*key, row[0])
            if not mine[0]:
                mine[0] = row[0]
            for i in range(1, 8):
                mine[i] += row[i]
            mine[8] |= row[8]
        for skey, count in other.suggests.items():
            self.suggests[skey] = self.suggests.get(skey, 0) + count
        for dkey, counts in other.documents.items():
            doc = self.documents.setdefault(dkey, [0, 0])
            doc[0] += counts[0]
            doc[1] += counts[1]
