"""Every route the client calls: method, OpenAPI path, whether repeating it is harmless, answer model.

``tests/clients/test_python_client_models.py`` checks this table against the server's OpenAPI
document: each route exists there, and its answer model has the documented fields and types.
"""

from __future__ import annotations

from typing import Any

from shopsearch_client import models as m
from shopsearch_client._core import Route

P = "/v1/projects/{project_id}"
I = P + "/indices/{index_id}"  # noqa: E741


def get(path: str, answer: Any = None) -> Route:
    return Route("GET", path, True, answer)


def put(path: str, answer: Any = None) -> Route:
    return Route("PUT", path, True, answer)


def delete(path: str) -> Route:
    return Route("DELETE", path, True)


def post(path: str, answer: Any = None, *, idempotent: bool = False) -> Route:
    return Route("POST", path, idempotent, answer)


STATUS = get("/v1/status", m.Status)
STOREFRONT_SEARCH = post("/v1/search/{profile_key}", m.SearchAnswer, idempotent=True)
STOREFRONT_SUGGEST = post("/v1/suggest/{suggest_key}", m.SuggestAnswer, idempotent=True)
STOREFRONT_FACET_VALUES = post("/v1/search/{profile_key}/facet-values", m.FacetValuesAnswer, idempotent=True)
MULTI_SEARCH = post("/v1/multi-search", m.MultiSearchAnswer, idempotent=True)
EVENTS = post("/v1/events", m.EventsAccepted)  # repeating counts the clicks twice

PROJECT = get(P, m.ProjectInfo)
TASKS = get(P + "/tasks", m.Page[m.Task])
TASK = get(P + "/tasks/{task_id}", m.Task)

INDICES = get(P + "/indices", m.Page[m.IndexInfo])
CREATE_INDEX = post(P + "/indices", m.IndexInfo)
INDEX = get(I, m.IndexInfo)
DELETE_INDEX = delete(I)
MAPPING = get(I + "/mapping")
UPDATE_MAPPING = put(I + "/mapping", m.TaskAccepted)
MAPPING_USAGE = get(I + "/mapping/usage", m.MappingUsage)
FACETS = get(I + "/facets", m.Facets)
UPDATE_FACETS = put(I + "/facets", m.Facets)
SET_INTEGRATION = put(I + "/integration", m.Integration)
REMOVE_INTEGRATION = delete(I + "/integration")
FEED = get(I + "/feed", m.Feed)
SET_FEED = put(I + "/feed", m.Feed)
REMOVE_FEED = delete(I + "/feed")
SYNC_FEED = post(I + "/feed/sync", m.TaskAccepted)
REINDEX = post(I + "/reindex", m.TaskAccepted)
CANCEL_REINDEX = post(I + "/reindex/cancel", m.ReindexCancelAnswer)

# uploads and deletes are sent with an Idempotency-Key, which makes them safe to repeat
UPLOAD_DOCUMENTS = post(I + "/documents", m.TaskAccepted)
DELETE_DOCUMENTS = post(I + "/documents/delete", m.TaskAccepted)
FLUSH_DOCUMENTS = post(I + "/documents/flush", m.FlushAnswer)
DOCUMENTS = get(I + "/documents", m.Page[dict[str, Any]])
DOCUMENT = get(I + "/documents/{doc_id}")

OPEN_SESSION = post(I + "/replace-sessions", m.ReplaceSessionInfo)
SESSION = get(I + "/replace-sessions/{session_id}", m.ReplaceSessionInfo)
# staging is by id: a repeated batch replaces what it staged
SESSION_UPLOAD = post(I + "/replace-sessions/{session_id}/documents", m.SessionUpload, idempotent=True)
COMMIT_SESSION = post(I + "/replace-sessions/{session_id}/commit", m.TaskAccepted)
ABORT_SESSION = post(I + "/replace-sessions/{session_id}/abort")

PROFILES = get(I + "/profiles", m.Page[m.Profile])
CREATE_PROFILE = post(I + "/profiles", m.Profile)
PROFILE = get(I + "/profiles/{profile_id}", m.Profile)
UPDATE_PROFILE = put(I + "/profiles/{profile_id}", m.Profile)
DELETE_PROFILE = delete(I + "/profiles/{profile_id}")
SEARCH = post(I + "/search", m.SearchAnswer, idempotent=True)
FACET_VALUES = post(I + "/facet-values", m.FacetValuesAnswer, idempotent=True)

SYNONYMS = get(I + "/synonyms", m.Page[m.Synonym])
CREATE_SYNONYM = post(I + "/synonyms", m.Synonym)
IMPORT_SYNONYMS = post(I + "/synonyms/import", m.SynonymImport)  # appending twice adds twice
REPLACE_SYNONYMS = post(I + "/synonyms/import", m.SynonymImport, idempotent=True)  # mode "replace"
EXPORT_SYNONYMS = get(I + "/synonyms/export", m.Page[m.Synonym])
EXPORT_SYNONYMS_SOLR = get(I + "/synonyms/export", m.SolrSynonyms)
SYNONYM = get(I + "/synonyms/{synonym_id}", m.Synonym)
UPDATE_SYNONYM = put(I + "/synonyms/{synonym_id}", m.Synonym)
DELETE_SYNONYM = delete(I + "/synonyms/{synonym_id}")

RULES = get(I + "/rules", m.Page[m.Rule])
CREATE_RULE = post(I + "/rules", m.Rule)
ORDER_RULES = put(I + "/rules/order", m.Page[m.Rule])
TEST_RULES = post(I + "/rules/test", m.RuleTestAnswer, idempotent=True)
RULE = get(I + "/rules/{rule_id}", m.Rule)
UPDATE_RULE = put(I + "/rules/{rule_id}", m.Rule)
DELETE_RULE = delete(I + "/rules/{rule_id}")

SUGGESTION_CONFIG = get(I + "/suggestions/config", m.SuggestionConfig)
UPDATE_SUGGESTION_CONFIG = put(I + "/suggestions/config", m.SuggestionConfig)
CUSTOM_SUGGESTIONS = get(I + "/suggestions/custom", m.Page[m.CustomSuggestion])
ADD_CUSTOM_SUGGESTION = post(I + "/suggestions/custom", m.CustomSuggestion)
DELETE_CUSTOM_SUGGESTION = delete(I + "/suggestions/custom/{suggestion_id}")
REBUILD_SUGGESTIONS = post(I + "/suggestions/rebuild", m.TaskAccepted)
SUGGEST = post(I + "/suggest", m.SuggestAnswer, idempotent=True)

ANALYTICS = get(I + "/analytics", m.Analytics)

ALL: dict[str, Route] = {name: value for name, value in globals().items() if isinstance(value, Route)}
