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


def _box(lat: np.ndarray, lng: np.ndarray, south: float, north: float, west: float, east: float) -> np.ndarray:
    """Points with ``south <= lat <= north`` and a longitude from ``west`` eastward to ``east``."""
    with np.errstate(invalid="ignore"):
        mask = (lat >= south) & (lat <= north)
        if west <= east:
            return mask & (lng >= west) & (lng <= east)  # type: ignore[no-any-return]
        return mask & ((lng >= west) | (lng <= east))  # across the antimeridian


def area_mask(lat: np.ndarray, lng: np.ndarray, cond: dict[str, Any]) -> np.ndarray:
    """Which points lie in the area of a checked geo condition (missing points never do). A circle
    or a polygon is first narrowed to its bounding box (comparisons only), and measured exactly
    on what is in it: a tenth of the cost of measuring every point of a shard."""
    kind, area = area_of(cond)
    if kind == "box":
        (lat1, lng1), (lat2, lng2) = area
        return _box(lat, lng, min(lat1, lat2), max(lat1, lat2), lng1, lng2)
    if kind == "around":
        lat0, lng0, radius = area
        near = _circle_box(lat, lng, lat0, lng0, radius)
        with np.errstate(invalid="ignore"):
            near[near] = distances(lat[near], lng[near], (lat0, lng0)) <= radius
        return near
    ys, xs = [p[0] for p in area], [p[1] for p in area]
    near = _box(lat, lng, min(ys), max(ys), min(xs), max(xs))
    near[near] = _in_polygon(lat[near], lng[near], area)
    return near


def _circle_box(lat: np.ndarray, lng: np.ndarray, lat0: float, lng0: float, radius: float) -> np.ndarray:
    """The points of the box around a circle: its latitudes, and the longitudes of its widest
    extent (every longitude when it holds a pole)."""
    angle = radius / EARTH_RADIUS_M
    dlat = np.degrees(angle)
    south, north = lat0 - dlat, lat0 + dlat
    if south <= -90 or north >= 90 or np.sin(angle) >= np.cos(np.radians(lat0)):
        return _box(lat, lng, max(south, -90.0), min(north, 90.0), -180.0, 180.0)
    dlng = float(np.degrees(np.arcsin(np.sin(angle) / np.cos(np.radians(lat0)))))
    if dlng >= 180:
        return _box(lat, lng, south, north, -180.0, 180.0)
    west, east = lng0 - dlng, lng0 + dlng
    return _box(lat, lng, south, north, west + 360 if west < -180 else west, east - 360 if east > 180 else east)


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
