"""Search analytics (spec 4.9, CONTRACT §6). — routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["analytics"])
