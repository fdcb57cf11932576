"""The layering of ARCHITECTURE.md, checked on the source: ``shared`` stands alone, only
``control_plane/shard`` reaches ``search_workers``, no module import circle, imports at module top
(except the ones documented as lazy), no loop between control-plane packages, SQL in repositories
only, and another domain's models or repository imported only where CROSS_DOMAIN_ALLOWED says why."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "control_plane", "search_workers", "cli")
CLIENT = ROOT / "clients" / "python"  # shopsearch_client, a distribution of its own
# (module, imported): documented lazy imports (``make_host`` does not import Ray unless asked)
LAZY = {("search_workers.hosting", "search_workers.actors.ray_host"),
        ("control_plane.mcp.mount", "control_plane.mcp.server"),  # the MCP SDK at the first exchange
        # `serve`'s supervisor of several workers builds no app: only each worker imports it
        ("cli.serve", "control_plane.app"), ("cli.serve", "control_plane.shard")}


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for root, package in [*((ROOT, p) for p in PACKAGES), (CLIENT, "shopsearch_client")]:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = (path, ast.parse(path.read_text(), str(path)))
    return out


MODULES = _modules()


def _imports(name: str, path: Path, nodes: list[ast.stmt] | ast.Module) -> list[str]:
    """Absolute names imported by ``nodes``; ``from . import x`` counts as the submodule ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in nodes.body if isinstance(nodes, ast.Module) else nodes:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            out += subs or [base]
    return out


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    return [n for n in tree.body if not (isinstance(n, ast.If) and "TYPE_CHECKING" in ast.dump(n.test))]


def test_shared_imports_none_of_the_other_packages_nor_frameworks():
    forbidden = {"control_plane", "search_workers", "cli", "fastapi", "starlette", "sqlalchemy", "ray"}
    for name, (path, tree) in MODULES.items():
        if name.startswith("shared"):
            for target in _imports(name, path, tree):
                assert target.split(".")[0] not in forbidden, (name, target)


def test_only_the_shard_package_reaches_the_search_workers():
    for name, (path, tree) in MODULES.items():
        if name.startswith(("control_plane", "cli")) and not name.startswith("control_plane.shard"):
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    for target in _imports(name, path, [node]):
                        assert not target.startswith("search_workers"), (name, target)


def test_no_import_circle_and_imports_at_module_top():
    """Imports for type checking count: a reader follows an annotation's import as any other."""
    graph: dict[str, set[str]] = {}
    for name, (path, tree) in MODULES.items():
        typing_only = [n for top in tree.body if top not in _top_level(tree) for n in ast.walk(top)
                       if isinstance(n, ast.Import | ast.ImportFrom)]
        graph[name] = {t for t in _imports(name, path, [*_top_level(tree), *typing_only])
                       if t in MODULES and t != name}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        for target in _imports(name, path, [inner]):
                            assert (name, target) in LAZY, f"{name} imports {target} inside {node.name}()"
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import circle: {exc.args[1]}") from exc


# --------------------------------------------------------------------------- domains (issue 28)
def _runtime_imports(name: str) -> list[str]:
    """What ``name`` imports when it runs: at module top, ``TYPE_CHECKING`` blocks left out (an
    annotation-only import is no load-order tie), nested ones included (the lazy ones above)."""
    path, tree = MODULES[name]
    skipped = {id(node) for top in tree.body if top not in _top_level(tree) for node in ast.walk(top)}
    return _imports(name, path, [n for n in ast.walk(tree) if id(n) not in skipped
                                 and isinstance(n, ast.Import | ast.ImportFrom)])


def _control_plane_part(module: str) -> str | None:
    """The package (or top-level module) of the control plane that ``module`` belongs to."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "control_plane" and len(parts) > 1 else None


# The runtime holds each domain's per-process state, taken from modules of state alone
# (``search.state``, ``access.keys``... which import no runtime: the file circle test checks it), and
# the domains' functions take the runtime: it is where the packages meet, left out of their graph.
HUB = "control_plane.runtime"


def package_graph() -> dict[str, dict[str, list[str]]]:
    """Control-plane package -> the packages it imports -> the module imports that tie them."""
    graph: dict[str, dict[str, list[str]]] = {}
    for name in MODULES:
        source = _control_plane_part(name)
        if source is None or source == HUB:
            continue
        graph.setdefault(source, {})
        for target in _runtime_imports(name):
            part = _control_plane_part(target)
            if part is not None and part != source:
                graph[source].setdefault(part, []).append(f"{name} -> {target}")
    return graph


def test_no_import_loop_between_control_plane_packages():
    graph = package_graph()
    try:
        tuple(TopologicalSorter({k: set(v) for k, v in graph.items()}).static_order())
    except CycleError as exc:
        loop = exc.args[1][::-1]  # graphlib names a node before the ones it imports: turn it round
        ties = [graph[a][b][0] for a, b in zip(loop, loop[1:], strict=False)]
        raise AssertionError(f"packages import each other in a loop: {' -> '.join(loop)}; {ties}") from exc


def test_the_search_workers_never_import_the_control_plane_or_the_cli():
    for name, (path, tree) in MODULES.items():
        if name.startswith("search_workers"):
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    for target in _imports(name, path, [node]):
                        assert target.split(".")[0] not in ("control_plane", "cli"), (name, target)


# SQLAlchemy's statement builders: a module that imports one builds SQL.
SQL_BUILDERS = {
    "select", "insert", "update", "delete", "exists", "func", "text", "and_", "or_", "not_", "case", "literal",
    "distinct", "union", "aliased", "Select", "Table", "tuple_", "null", "true", "false",
}
# The session's query methods: called on the session (``db``), they run SQL.
SESSION_QUERIES = {"execute", "scalar", "scalars", "get", "query"}
SESSION_NAMES = {"db", "session", "connection", "conn"}
# Where SQL stands outside a ``repository.py``, and why.
SQL_ALLOWED = {
    "control_plane/db.py": "the database itself: engine, sessions, the ping",
    "control_plane/wire.py": "keyset_page: the list cursor every repository's list query is paged with",
}


def sql_faults(path: Path, tree: ast.Module) -> list[str]:
    """What in the module builds or runs SQL through SQLAlchemy."""
    faults = []
    imports_sqlalchemy = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            imports_sqlalchemy = True
            faults += [f"imports {node.module}.{a.name}" for a in node.names if a.name in SQL_BUILDERS
                       or (node.module or "").startswith("sqlalchemy.dialects")]
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "sqlalchemy" for a in node.names):
            imports_sqlalchemy = True
    if imports_sqlalchemy:  # a session's calls (sqlite3's, as in the state file, are not the database)
        faults += [
            f"line {node.lineno}: {node.func.value.id}.{node.func.attr}()"  # type: ignore[attr-defined]
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in SESSION_NAMES
            and node.func.attr in SESSION_QUERIES
        ]
    return faults


def _source_files() -> dict[str, tuple[Path, ast.Module]]:
    return {str(path.relative_to(ROOT)): (path, tree) for path, tree in MODULES.values()}


def test_sql_only_in_repositories():
    found = {}
    for rel, (path, tree) in _source_files().items():
        if path.name == "repository.py" or rel in SQL_ALLOWED:
            continue
        faults = sql_faults(path, tree)
        if faults:
            found[rel] = faults
    assert not found, f"SQL outside repositories: {found}"


def test_sql_allowances_are_still_needed():
    files = _source_files()
    stale = [rel for rel in SQL_ALLOWED if rel not in files or not sql_faults(*files[rel])]
    assert not stale, f"no SQL here any more: take these off the allowed lists: {stale}"


def test_endpoints_build_no_sql_and_commit_nothing():
    """Endpoints call services: no SQL, no repository, no commit (the request's transaction commits)."""
    for name, (path, tree) in MODULES.items():
        rel = str(path.relative_to(ROOT))
        if path.name != "endpoints.py":
            continue
        repositories = [t for t in _imports(name, path, tree) if t.endswith(".repository")]
        assert not repositories, (rel, repositories)
        assert not sql_faults(path, tree), (rel, sql_faults(path, tree))
        imported = {f"{node.module}.{a.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and (node.module or "").startswith("sqlalchemy") for a in node.names}
        assert imported <= {"sqlalchemy.orm.Session"}, (rel, imported)
        commits = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                   and isinstance(node.func, ast.Attribute) and node.func.attr == "commit"]
        assert not commits, (rel, "commits at lines", commits)


def test_the_engine_imports_neither_ray_nor_the_web_framework():
    for name, (path, tree) in MODULES.items():
        if name.startswith("search_workers.engine"):
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    for target in _imports(name, path, [node]):
                        assert target.split(".")[0] not in ("ray", "fastapi", "starlette"), (name, target)


def test_the_access_layer_and_the_task_queue_import_no_domain():
    """They ask the domains through the lists of ``control_plane.wiring`` (access.registry,
    task.registry): a domain is a package with models or a repository."""
    domains = {f"control_plane.{p.parent.name}" for p in (ROOT / "control_plane").glob("*/*.py")
               if p.name in ("models.py", "repository.py")}
    graph = package_graph()
    for layer in ("control_plane.access", "control_plane.task"):
        reached = {pkg: ties for pkg, ties in graph[layer].items() if pkg in domains - {layer}}
        assert not reached, (layer, reached)


# (package, another package's models or repository it may import): why. Everything else goes through
# that package's service. The list may only shrink (test_cross_domain_allowances_are_still_needed).
CROSS_DOMAIN_ALLOWED = {
    ("models", "*"): "the metadata every model registers in, for Alembic and create_all",
    ("wiring", "*.repository"): "the one place that tells access and the task registry each domain's lookups",
    ("api_key", "auth.repository"): "a key's creator must have confirmed their email",
    ("auth", "org.models"): "an organization's owners, read with their accounts in one query",
    ("auth", "user.models"): "users are the accounts auth signs in",
    ("org", "user.models"): "members are users",
    ("org", "project.models"): "an organization's projects, listed and counted with it",
    ("index", "project.models"): "an index lives under a project (tenancy filter)",
    ("index", "org.repository"): "an index's plan limits are its organization's",
    ("index", "task.models"): "an index change queues its rebuild in the same transaction",
    ("document", "index.models"): "documents are written under their index row (mapping, sequence, lock)",
    ("document", "task.models"): "an upload queues its task in the same transaction",
    ("rule", "index.models"): "a rule is checked against its index's mapping",
    ("rule", "index.repository"): "a rule is checked against its index's mapping",
    ("synonym", "index.models"): "synonyms move their index's epoch",
    ("synonym", "index.repository"): "synonyms move their index's epoch",
    ("search", "index.models"): "a search resolves its index row (mapping, epoch) on a cache miss",
    ("search", "index.repository"): "a search resolves its index row (mapping, epoch) on a cache miss",
    ("search", "profile.repository"): "a search resolves its profile on a cache miss",
    ("search", "rule.repository"): "merchandising reads the index's rules once per epoch",
    ("search", "synonym.repository"): "merchandising reads the index's synonyms once per epoch",
    ("suggestion", "index.models"): "suggestions are built for an index row",
    ("suggestion", "index.repository"): "suggestions are built for an index row",
    ("suggestion", "profile.repository"): "product suggestions run a profile's search",
    ("suggestion", "document.repository"): "the rebuild reads the live documents",
    ("suggestion", "task.models"): "a config change queues the rebuild in the same transaction",
    ("suggestion", "task.repository"): "the rebuild's task is looked up to coalesce requests",
    ("door", "rule.repository"): "rules/test resolves a saved rule's draft",
    ("events", "analytics.repository"): "events are counted in the analytics tables",
    ("tenants", "*.repository"): "an operator's tenant spans an org, its owner, project, key and indices",
    ("tenants", "task.models"): "an operator's reindex answers the task it queued",
}


def cross_domain_imports() -> dict[tuple[str, str], list[str]]:
    """(package, imported domain module) -> the modules that import it, for models and repositories."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, (path, tree) in MODULES.items():
        me = _control_plane_part(name)
        if me is None:
            continue
        for target in _imports(name, path, tree):
            parts = target.split(".")
            domain_part = len(parts) == 3 and parts[0] == "control_plane" and parts[2] in ("models", "repository")
            if domain_part and f"control_plane.{parts[1]}" != me:
                found.setdefault((me.split(".")[1], f"{parts[1]}.{parts[2]}"), []).append(name)
    return found


def _allowance(package: str, target: str) -> tuple[str, str] | None:
    for key in ((package, target), (package, "*." + target.split(".")[1]), (package, "*")):
        if key in CROSS_DOMAIN_ALLOWED:
            return key
    return None


def test_domains_import_another_domains_models_or_repository_only_where_allowed():
    unexpected = {key: names for key, names in cross_domain_imports().items() if _allowance(*key) is None}
    assert not unexpected, f"go through the other domain's service instead: {unexpected}"


def test_cross_domain_allowances_are_still_needed():
    used = {_allowance(*key) for key in cross_domain_imports()}
    assert set(CROSS_DOMAIN_ALLOWED) - used == set()
