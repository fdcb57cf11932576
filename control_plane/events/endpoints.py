"""Click and conversion events (CONTRACT §6). — routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["events"])
