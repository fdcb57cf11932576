"""Ray side of the shard hosts: the one actor factory and :class:`RayHost` (imports Ray)."""
