"""Autocomplete: suggestion config, custom suggestions, rebuilds and suggest (spec 4.8, CONTRACT §6). — routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["suggestions"])
