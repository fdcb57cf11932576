"""Synonyms of an index (spec 4.6, CONTRACT §6). — routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["synonyms"])
