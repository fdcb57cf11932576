"""Aggregated analytics rows: one per (index, day, normalized query), per (index, day) and per
(index, day, clicked document) — storage grows with distinct queries per day, not with searches.

No foreign key to ``indices``: counts flushed just after an index is deleted must not fail the
whole batch; the maintenance job removes rows of indices that no longer exist.
"""

from __future__ import annotations

from datetime import date

from sqlalchemy import BigInteger, Date, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base


class QueryDay(Base):
    """Searches of one normalized query on one index on one UTC day, and the clicks they got."""

    __tablename__ = "analytics_queries"
    __table_args__ = (Index("ix_analytics_queries_day", "day"),)

    index_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    # first 16 hex digits of sha256(normalized query): the key clicks find their query by
    query_hash: Mapped[str] = mapped_column(String(16), primary_key=True)
    query: Mapped[str] = mapped_column(String(200))
    searches: Mapped[int] = mapped_column(BigInteger, default=0)
    no_results: Mapped[int] = mapped_column(BigInteger, default=0)
    hits: Mapped[int] = mapped_column(BigInteger, default=0)  # sum of totals, for avgHits
    clicks: Mapped[int] = mapped_column(BigInteger, default=0)
    conversions: Mapped[int] = mapped_column(BigInteger, default=0)
    positioned_clicks: Mapped[int] = mapped_column(BigInteger, default=0)
    position_sum: Mapped[int] = mapped_column(BigInteger, default=0)
    # who searched: bit (hash of the client mod 63) set per client, OR-ed on every write; popular
    # queries need several bits (``analytics.clients``)
    clients: Mapped[int] = mapped_column(BigInteger, default=0)


class IndexDay(Base):
    """Per index and day counts that have no query of their own (suggest requests)."""

    __tablename__ = "analytics_days"
    __table_args__ = (Index("ix_analytics_days_day", "day"),)

    index_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    suggests: Mapped[int] = mapped_column(BigInteger, default=0)


class DocumentDay(Base):
    """Clicks and conversions of one document on one index on one day (``topClicked``)."""

    __tablename__ = "analytics_documents"
    __table_args__ = (Index("ix_analytics_documents_day", "day"),)

    index_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    document_id: Mapped[str] = mapped_column(String(512), primary_key=True)
    clicks: Mapped[int] = mapped_column(BigInteger, default=0)
    conversions: Mapped[int] = mapped_column(BigInteger, default=0)


class EventKey(Base):
    """A click or conversion counted: one row per (search, document, type), so a replayed event is
    not counted twice whichever process receives it. ``day`` is the search's (rows go with the
    analytics retention, past which its query id is refused anyway); ``received`` the day the
    event came, which the daily cap per index counts."""

    __tablename__ = "analytics_event_keys"
    __table_args__ = (Index("ix_analytics_event_keys_received", "index_id", "received"),
                      Index("ix_analytics_event_keys_day", "day"))

    index_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    key: Mapped[str] = mapped_column(String(32), primary_key=True)
    day: Mapped[date] = mapped_column(Date)
    received: Mapped[date] = mapped_column(Date)
