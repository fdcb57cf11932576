"""Synonyms of an index (spec 4.6, CONTRACT §6)."""
