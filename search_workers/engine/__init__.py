"""Shard search engine: Whoosh on disk, vectorised numpy in memory. No Ray/FastAPI/SQLAlchemy.

Public API: :class:`ShardEngine`, :class:`EngineError`, :class:`MappingError`.
"""

from .engine import ShardEngine
from .errors import EngineError, MappingError, ShardBusy

__all__ = ["ShardEngine", "EngineError", "MappingError", "ShardBusy"]
