"""What the domains hand to the layers beneath them, named once (ARCHITECTURE.md, "Layering").

* The access layer imports no domain: it asks the questions of
  :class:`~control_plane.access.registry.Directory` and, for each id a project route may carry in its
  path, whether it exists there; the domains' repositories answer, as listed here.
* The task runner imports no domain: it runs the task types and maintenance jobs of the task
  modules in :data:`TASK_MODULES`.

:func:`install` puts the lists in place; the app (``create_app``) and ``shopsearch worker`` call it
before anything is served or run.
"""

from __future__ import annotations

from control_plane.access import registry as access
from control_plane.analytics import maintenance as analytics_tasks
from control_plane.api_key import repository as api_keys
from control_plane.auth import repository as auth
from control_plane.document import feed_sync, rebuild, replicas
from control_plane.document import repository as documents
from control_plane.document import tasks as document_tasks
from control_plane.index import repository as indices
from control_plane.org import repository as orgs
from control_plane.profile import repository as profiles
from control_plane.project import repository as projects
from control_plane.rule import repository as rules
from control_plane.serving import tasks as serving_tasks
from control_plane.suggestion import repository as suggestions
from control_plane.suggestion import tasks as suggestion_tasks
from control_plane.synonym import repository as synonyms
from control_plane.task import registry as task_registry
from control_plane.task import repository as tasks

DIRECTORY = access.Directory(
    key_by_hash=api_keys.key_info_by_hash,
    key_used=api_keys.touch_last_used,
    family=auth.family_info,
    project_org=projects.org_of,
    member_role=orgs.member_role,
    profile_project=profiles.project_of_key,
)

# Every id a project route may carry in its path, and the repository that answers whether it exists
# under the project (and index). The index comes first: the others are looked for under it.
PATH_IDS = (
    access.PathId("index_id", "Index", indices.exists_under),
    access.PathId("profile_id", "Profile", profiles.exists_under),
    access.PathId("session_id", "Replace session", documents.api_session_exists),
    access.PathId("doc_id", "Document", documents.live_document_exists),
    access.PathId("key_id", "API key", api_keys.live_key_exists),
    access.PathId("task_id", "Task", tasks.task_exists),
    access.PathId("suggestion_id", "Custom suggestion", suggestions.custom_exists),
    access.PathId("synonym_id", "Synonym", synonyms.exists_under),
    access.PathId("rule_id", "Rule", rules.exists_under),
)

# The task modules, in the order their maintenance jobs run.
TASK_MODULES = (
    suggestion_tasks.TASKS,  # suggestions.rebuild; schedules rebuilds
    document_tasks.TASKS,  # documents.upsert/delete/flush; expires idle replace sessions
    rebuild.TASKS,  # index.reindex, mapping.update, replace.commit
    feed_sync.TASKS,  # feed.sync; schedules syncs
    replicas.TASKS,  # watches the nodes: re-creates, moves and re-feeds replicas
    serving_tasks.TASKS,  # forgets serving processes gone for good
    analytics_tasks.TASKS,  # analytics retention
)


def install() -> None:
    """Hand the lists above to the layers that ask (idempotent)."""
    access.install(DIRECTORY, PATH_IDS)
    task_registry.install(TASK_MODULES)
