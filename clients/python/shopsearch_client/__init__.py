"""Python client of the shopsearch REST API.

    from shopsearch_client import Client

    with Client("http://127.0.0.1:8000", "ss_sk_…") as client:
        index = client.index("prj_…", "idx_…")
        tasks = index.upload_documents(products)          # batches of 1000, any iterable
        index.wait_for_tasks(tasks)
        answer = index.search("iphone", per_page=5)

:class:`AsyncClient` has the same methods, awaited. Errors raise :class:`ShopsearchError`.
"""

from shopsearch_client import models
from shopsearch_client._calls import Async, Sync
from shopsearch_client._handles import Index, Project, ReplaceSession, UploadProgress
from shopsearch_client.client import AsyncClient, Client, __version__
from shopsearch_client.errors import ShopsearchError
from shopsearch_client.retry import NO_RETRY, RetryPolicy

__all__ = [
    "NO_RETRY", "Async", "AsyncClient", "Client", "Index", "Project", "ReplaceSession", "RetryPolicy",
    "ShopsearchError", "Sync", "UploadProgress", "__version__", "models",
]
