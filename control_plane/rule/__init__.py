"""Ranking rules of an index (spec 4.7, CONTRACT §6)."""
