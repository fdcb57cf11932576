"""Shard search engine: Whoosh on disk, vectorised numpy in memory. No Ray/FastAPI/SQLAlchemy.

It speaks the typed contract of ``shared.contract``: ``ShardEngine.apply`` takes ``Change``
objects, ``ShardEngine.search`` takes a ``Query`` and answers an ``Answer``.

* ``shard.py``: :class:`ShardEngine`, one shard's lifecycle (open, load, rewrite), writes and reads.
* ``search.py``: the search pipeline over the in-memory index, a module per stage: ``clauses.py``
  (with ``expansions.py``) -> ``candidates.py`` (``relax.py``) -> ``filters.py`` -> ``scoring.py``
  -> ``facets.py``, ``ranking.py`` -> ``highlight.py``.
* ``memindex.py``: the in-memory index; ``values.py``: document values as columns read them;
  ``analysis.py``: text analysis; ``mapping.py``: mappings.
* ``whoosh_store.py``: the Whoosh index on disk (the one module patching Whoosh internals);
  ``persist.py``: write-behind commits in a helper process; ``snapshot.py``: the memory snapshot.

Public API: :class:`ShardEngine`, :class:`EngineError`, :class:`MappingError`, :class:`SearchTimeout`,
:class:`ShardBusy`.
"""

from .errors import EngineError, MappingError, SearchTimeout, ShardBusy
from .shard import ShardEngine

__all__ = ["ShardEngine", "EngineError", "MappingError", "SearchTimeout", "ShardBusy"]
