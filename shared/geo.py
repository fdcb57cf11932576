"""Geo points and areas as the API takes them (CONTRACT §10): a document's ``geopoint`` value
``{lat, lng}``, a filter's ``{around: {lat, lng, radiusM}}`` or ``{within: {box | polygon}}``, and a
search's ``near``. What is checked here (shapes, coordinate bounds) is the same for a stored
document, a search, a profile and a rule; the engine evaluates what passed.

A box is two opposite corners ``[[lat, lng], [lat, lng]]``: it spans the latitudes between them and
the longitudes from the first corner's eastward to the second's, so a first longitude greater than
the second crosses the antimeridian (``[[50, 170], [60, -170]]`` is 20 degrees wide). A polygon is
its vertices in order (closed implicitly), at most :data:`MAX_POLYGON_POINTS`, taken as straight
lines in latitude and longitude (shop-sized areas; one crossing the antimeridian is split in two
under ``or``).
"""

from __future__ import annotations

import math
from typing import Any

#: vertices of a ``within.polygon``
MAX_POLYGON_POINTS = 100
#: the largest ``around.radiusM``: half the Earth's circumference
MAX_RADIUS_M = 20_037_509.0
GEO_OPS = frozenset({"around", "within"})

Point = tuple[float, float]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def point_of(value: Any) -> Point | None:
    """``(lat, lng)`` of ``{lat, lng}`` within bounds, else None."""
    if not isinstance(value, dict) or set(value) != {"lat", "lng"}:
        return None
    lat, lng = _number(value.get("lat")), _number(value.get("lng"))
    if lat is None or lng is None or not -90.0 <= lat <= 90.0 or not -180.0 <= lng <= 180.0:
        return None
    return lat, lng


def _pair(value: Any) -> Point | None:
    """``(lat, lng)`` of ``[lat, lng]`` within bounds, else None."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    return point_of({"lat": value[0], "lng": value[1]})


POINT_WORDS = "{lat, lng}: lat a number from -90 to 90, lng from -180 to 180"
PAIR_WORDS = "[lat, lng]: lat a number from -90 to 90, lng from -180 to 180"


def is_geo_condition(cond: Any) -> bool:
    """A filter condition naming a geo operator (checked by :func:`geo_faults`)."""
    return isinstance(cond, dict) and bool(cond) and set(cond) <= GEO_OPS


def geo_faults(cond: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """Every problem of a geo condition ``{around: ...}`` or ``{within: ...}`` (one operator)."""
    if len(cond) != 1:
        return [{"path": path, "message": "one of around or within"}]
    (op, area), = cond.items()
    at = f"{path}.{op}"
    if not isinstance(area, dict):
        return [{"path": at, "message": "must be an object"}]
    if op == "around":
        faults = []
        if set(area) != {"lat", "lng", "radiusM"}:
            faults.append({"path": at, "message": "takes lat, lng and radiusM"})
        elif point_of({"lat": area["lat"], "lng": area["lng"]}) is None:
            faults.append({"path": at, "message": f"lat and lng as {POINT_WORDS}"})
        radius = _number(area.get("radiusM"))
        if "radiusM" in area and (radius is None or not 0 < radius <= MAX_RADIUS_M):
            faults.append({"path": f"{at}.radiusM", "message": f"a number of meters above 0, at most {MAX_RADIUS_M:.0f}"})
        return faults
    if set(area) not in ({"box"}, {"polygon"}):
        return [{"path": at, "message": "takes box or polygon"}]
    if "box" in area:
        box = area["box"]
        if not isinstance(box, list) or len(box) != 2:
            return [{"path": f"{at}.box", "message": "two opposite corners [[lat, lng], [lat, lng]]"}]
        return [{"path": f"{at}.box[{i}]", "message": PAIR_WORDS} for i, c in enumerate(box) if _pair(c) is None]
    polygon = area["polygon"]
    if not isinstance(polygon, list) or not 3 <= len(polygon) <= MAX_POLYGON_POINTS:
        return [{"path": f"{at}.polygon", "message": f"3 to {MAX_POLYGON_POINTS} points [lat, lng]",
                 "limit": MAX_POLYGON_POINTS}]
    return [{"path": f"{at}.polygon[{i}]", "message": PAIR_WORDS} for i, c in enumerate(polygon) if _pair(c) is None]


def area_of(cond: dict[str, Any]) -> tuple[str, Any]:
    """A checked geo condition as ``("around", (lat, lng, radius))``, ``("box", (p, q))`` or
    ``("polygon", [points])``."""
    (op, area), = cond.items()
    if op == "around":
        return "around", (float(area["lat"]), float(area["lng"]), float(area["radiusM"]))
    if "box" in area:
        return "box", tuple(_pair(c) for c in area["box"])
    return "polygon", [_pair(c) for c in area["polygon"]]


# The OpenAPI components. The areas' inner shapes are stated in words, not as nested schemas: every
# operation taking a filter would carry them, and a schema fuzzer's coverage phase drew boundary
# cases of each (a third more time over the whole API for one condition); :func:`geo_faults` checks
# them in full.
GEO_SCHEMAS: dict[str, dict[str, Any]] = {
    "GeoFilter": {
        "description": "A `geopoint` field's area. `{around: {lat, lng, radiusM}}`: within `radiusM` meters "
                       "(above 0) of the point. `{within: {box: [[lat, lng], [lat, lng]]}}`: two opposite corners, "
                       "longitudes from the first's eastward to the second's. `{within: {polygon: [[lat, lng], "
                       f"...]}}`: 3 to {MAX_POLYGON_POINTS} points. Latitudes -90 to 90, longitudes -180 to 180.",
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "additionalProperties": False,
        "properties": {"around": {"type": "object"}, "within": {"type": "object"}},
    },
}
