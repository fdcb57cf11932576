"""Wire shapes of ``GET .../analytics`` (CONTRACT §6), for the OpenAPI document."""

from __future__ import annotations

from pydantic import Field

from control_plane.wire import WireModel


class Totals(WireModel):
    searches: int
    suggests: int
    no_result_searches: int
    no_result_rate: float = Field(description="No-result searches / searches, 0-1")
    clicks: int
    conversions: int
    click_through_rate: float = Field(description="Clicks per search, capped at 1")
    conversion_rate: float = Field(description="Conversions per search, capped at 1")
    average_click_position: float | None = Field(description="Mean 1-based position of clicks that gave one")


class TopQuery(WireModel):
    query: str
    count: int
    avg_hits: float
    click_through_rate: float


class NoResultQuery(WireModel):
    query: str
    count: int


class TopClicked(WireModel):
    document_id: str
    clicks: int
    conversions: int


class SeriesPoint(WireModel):
    date: str
    searches: int
    no_result_searches: int


class AnalyticsOut(WireModel):
    from_: str = Field(alias="from")
    to: str
    interval: str
    totals: Totals
    top_queries: list[TopQuery]
    no_result_queries: list[NoResultQuery]
    top_clicked: list[TopClicked]
    series: list[SeriesPoint]
