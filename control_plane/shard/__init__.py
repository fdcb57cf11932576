"""The one door from the control plane to the shard hosts (``search_workers``).

* :mod:`.bridge` - :class:`ShardBridge`: the process's shard host on its own loop; open, drop,
  read sequences, apply changes, search. Host methods are called directly and typed.
* :mod:`.feed` - :func:`catch_up`: feed a generation from change rows up to a sequence.
* :mod:`.serving` - :func:`search_serving`: search the serving generation, errors as the API's.

It takes ids, :class:`~shared.contract.ShardSpec`\\ s and row sources, never domain models; what
crosses to the shards and back is the typed contract of :mod:`shared.contract`. The rest of the
control plane imports nothing from ``search_workers``: the engine's mapping check and the hosts'
failure type are re-exported here.
"""

from search_workers.engine import MappingError
from search_workers.engine.mapping import validate_mapping
from search_workers.host import HostError
from search_workers.hosting import start_local_cluster

from .bridge import DROP_DELAY_S, ShardBridge, near_bridge
from .feed import ChangeRow, Feed, RowSource, catch_up
from .serving import search_serving

__all__ = ["DROP_DELAY_S", "ChangeRow", "Feed", "HostError", "MappingError", "validate_mapping", "RowSource", "ShardBridge", "catch_up", "near_bridge", "search_serving", "start_local_cluster"]
