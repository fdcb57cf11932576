"""Search analytics (spec 4.9, CONTRACT §6)."""
