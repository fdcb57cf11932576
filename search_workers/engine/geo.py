"""Geo columns of a shard: each ``geopoint`` field as two float64 columns (latitude, longitude in
degrees; NaN where a document has no valid point), the areas a filter names as masks over them, and
great-circle distances (haversine on a sphere of the Earth's mean radius: under 0.5 % off the
ellipsoid, which is what shops' "near me" needs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from shared.geo import Point, area_of, point_of

EARTH_RADIUS_M = 6_371_008.8


def lat_key(field: str) -> str:
    """The key of a geopoint field's latitude column in ``MemIndex.num`` (no field name holds NUL)."""
    return field + "\x00lat"


def lng_key(field: str) -> str:
    return field + "\x00lng"


def point_value(value: Any) -> Point | None:
    """A document's geopoint value (the first of a list), or None when it holds none."""
    if isinstance(value, list):
        value = value[0] if value else None
    return point_of(value)


def distances(lat: np.ndarray, lng: np.ndarray, at: Point) -> np.ndarray:
    """Meters from ``at`` to each ``(lat, lng)`` (NaN where the point is missing)."""
    la, ln = np.radians(lat), np.radians(lng)
    la0, ln0 = np.radians(at[0]), np.radians(at[1])
    h = np.sin((la - la0) / 2) ** 2 + np.cos(la) * np.cos(la0) * np.sin((ln - ln0) / 2) ** 2
    return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(h, 1.0)))


def area_mask(lat: np.ndarray, lng: np.ndarray, cond: dict[str, Any]) -> np.ndarray:
    """Which points lie in the area of a checked geo condition (missing points never do)."""
    kind, area = area_of(cond)
    if kind == "around":
        lat0, lng0, radius = area
        with np.errstate(invalid="ignore"):
            return distances(lat, lng, (lat0, lng0)) <= radius  # type: ignore[no-any-return]
    if kind == "box":
        (lat1, lng1), (lat2, lng2) = area
        with np.errstate(invalid="ignore"):
            mask = (lat >= min(lat1, lat2)) & (lat <= max(lat1, lat2))
            if lng1 <= lng2:
                return mask & (lng >= lng1) & (lng <= lng2)  # type: ignore[no-any-return]
            return mask & ((lng >= lng1) | (lng <= lng2))  # across the antimeridian
    return _in_polygon(lat, lng, area)


def _in_polygon(lat: np.ndarray, lng: np.ndarray, points: list[Point]) -> np.ndarray:
    """Even-odd rule (a ray east from each point crosses the edges an odd number of times), one edge
    at a time over every point; points on an edge's line may fall either way."""
    inside = np.zeros(len(lat), dtype=bool)
    known = ~(np.isnan(lat) | np.isnan(lng))
    y, x = lat[known], lng[known]
    flips = np.zeros(len(y), dtype=bool)
    for i, (yi, xi) in enumerate(points):
        yj, xj = points[i - 1]
        if yi == yj:
            continue  # horizontal: a ray never crosses it
        spans = (yi > y) != (yj > y)
        crossing = xi + (y - yi) * (xj - xi) / (yj - yi)
        flips ^= spans & (x < crossing)
    inside[known] = flips
    return inside
