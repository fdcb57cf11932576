"""Click and conversion events (CONTRACT §6)."""
