"""Autocomplete: suggestion config, custom suggestions, rebuilds and suggest (spec 4.8, CONTRACT §6)."""
