"""Shard search engine: Whoosh on disk, vectorised numpy in memory. No Ray/FastAPI/SQLAlchemy.

Public API: :class:`ShardEngine`, :class:`EngineError`, :class:`MappingError`, :class:`SearchTimeout`.
"""

from .engine import ShardEngine
from .errors import EngineError, MappingError, SearchTimeout, ShardBusy

__all__ = ["ShardEngine", "EngineError", "MappingError", "SearchTimeout", "ShardBusy"]
