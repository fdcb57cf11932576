"""``deploy/`` checked offline: each file against the schema its tool uses, and against the code.

No container engine or cluster runs here, so the files are validated, not run: the compose file
against the compose-spec schema (as ``check-jsonschema`` vendors it), the Kubernetes manifests
against the Kubernetes schemas (``kubernetes-validate``, strict: unknown fields are errors), the
RayCluster against KubeRay's CRD schema (vendored, ``schemas/README.md``), the Ray cluster launcher
config against Ray's own schema and checks. Every ``shopsearch``/``ray`` command the files run is
parsed by the real command-line parsers and every ``SHOPSEARCH_`` name must be a setting, so the
files cannot drift from the code. Each validator is also shown to reject a broken copy.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shlex
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import click
import jsonschema
import kubernetes_validate
import pytest
import ray
import typer.main
import yaml
from ray.autoscaler._private.util import fillout_defaults, validate_config
from ray.scripts.scripts import cli as ray_cli

from cli.main import app as shopsearch_app
from shared.settings import Settings

try:  # typer vendors its own click: its parse errors are not click's
    from typer._click.exceptions import UsageError as TyperUsageError
except ImportError:  # pragma: no cover - a typer built on click itself
    TyperUsageError = click.UsageError  # type: ignore[misc,assignment]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
K8S_VERSION = "1.30"  # the oldest Kubernetes the manifests are meant for
RAYCLUSTER_SCHEMA = Path(__file__).parent / "schemas" / "raycluster-v1.json"
DATA_DIR = "/var/lib/shopsearch"

SHOPSEARCH = typer.main.get_command(shopsearch_app)


def _yaml(path: Path) -> dict[str, Any]:
    value = yaml.safe_load(path.read_text())
    assert isinstance(value, dict), path
    return value


def _k8s_docs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return out


COMPOSE = _yaml(DEPLOY / "compose.yaml")
K8S_DOCS = _k8s_docs()
CLUSTER = _yaml(DEPLOY / "ray" / "cluster.yaml")


def _kind(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for _, d in K8S_DOCS if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


# -- command lines ----------------------------------------------------------------------------


class NotACommand(Exception):
    pass


def parse_command(argv: list[str]) -> None:
    """Parse ``shopsearch …`` or ``ray …`` with the real parser (nothing runs); raises
    :class:`NotACommand` when the command, an option or an option's value is not accepted."""
    program, *args = argv
    command: Any = {"shopsearch": SHOPSEARCH, "ray": ray_cli}[program]
    name = program
    while isinstance(getattr(command, "commands", None), Mapping):  # a group (click's, typer's, cli.main's lazy one)
        if not args:
            raise NotACommand(f"{argv}: no subcommand")
        name = args.pop(0)
        command = command.commands.get(name)
        if command is None:
            raise NotACommand(f"{argv}: no command {name!r}")
    try:
        command.make_context(name, args)
    except (click.UsageError, TyperUsageError) as exc:
        raise NotACommand(f"{argv}: {exc}") from exc


def _shell_commands(line: str) -> Iterator[list[str]]:
    """The ``shopsearch``/``ray`` commands in a shell line (split at ``;``, ``&&``, ``|``)."""
    for part in re.split(r";|&&|\|\||\|", line):
        words = shlex.split(part, comments=True)
        for i, word in enumerate(words):
            if word in ("shopsearch", "ray") and (i == 0 or words[i - 1] in ("exec", "run", "--rm", "-T", "--")
                                                  or words[i - 1].startswith(("api-", "worker"))):
                yield words[i:]
                break


def _k8s_containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, doc in K8S_DOCS:
        spec = doc.get("spec", {})
        templates = [spec.get("template")]
        if doc["kind"] == "RayCluster":
            templates = [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]
        for template in templates:
            for container in (template or {}).get("spec", {}).get("containers", []):
                yield name, container


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in (DEPLOY / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        pending += " " + line.rstrip("\\").strip()
        if not line.endswith("\\"):
            instruction, _, rest = pending.strip().partition(" ")
            out.append((instruction.upper(), rest.strip()))
            pending = ""
    return out


def all_commands() -> list[tuple[str, list[str]]]:
    """Every shopsearch/ray command line the deploy files run, with where it comes from."""
    found: list[tuple[str, list[str]]] = []
    for name, service in COMPOSE["services"].items():
        for key, argv in (("command", service.get("command")), ("healthcheck", service.get("healthcheck", {}).get("test"))):
            if isinstance(argv, list) and argv and argv[0] == "CMD":
                argv = argv[1:]
            if isinstance(argv, list) and argv and argv[0] in ("shopsearch", "ray"):
                found.append((f"compose {name} {key}", list(argv)))
    for name, container in _k8s_containers():
        argv = container.get("command")
        if argv and argv[0] in ("shopsearch", "ray"):
            found.append((f"k8s {name}", list(argv)))
    for key in ("head_start_ray_commands", "worker_start_ray_commands", "setup_commands"):
        for line in CLUSTER.get(key, []):
            found += [(f"ray cluster {key}", argv) for argv in _shell_commands(line)]
    for instruction, rest in _dockerfile():
        if instruction in ("CMD", "ENTRYPOINT") and rest.startswith("["):
            argv = json.loads(rest)
            if argv[0] in ("shopsearch", "ray"):
                found.append((f"Dockerfile {instruction}", argv))
    readme = (DEPLOY / "README.md").read_text()
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", readme, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            found += [("deploy/README.md", argv) for argv in _shell_commands(line)]
    for inline in re.findall(r"`((?:shopsearch|ray) [^`]+)`", readme):
        found.append(("deploy/README.md inline", shlex.split(inline)))
    return found


COMMANDS = sorted({(where, tuple(argv)) for where, argv in all_commands()})


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[f"{w}: {' '.join(a)[:60]}" for w, a in COMMANDS])
def test_every_command_exists_with_its_options(where: str, argv: tuple[str, ...]) -> None:
    parse_command(list(argv))


def test_the_files_run_every_role() -> None:
    runs = {argv[:3] for _, argv in COMMANDS}
    for expected in [("shopsearch", "serve", "--host"), ("shopsearch", "worker", "--concurrency"),
                     ("shopsearch", "db", "upgrade"), ("ray", "start", "--head")]:
        assert expected in runs, expected
    assert any(argv[:2] == ("ray", "start") and any(a.startswith("--address") for a in argv) for _, argv in COMMANDS)


@pytest.mark.parametrize("argv", [
    ["shopsearch", "worker", "--no-such-option"], ["shopsearch", "serve", "--workers", "many"],
    ["shopsearch", "db", "migrate"], ["shopsearch", "runner"], ["ray", "start", "--heed"],
])
def test_the_command_check_refuses_what_does_not_exist(argv: list[str]) -> None:
    with pytest.raises(NotACommand):
        parse_command(argv)


def test_every_shopsearch_variable_is_a_setting() -> None:
    settings = {f"SHOPSEARCH_{name.upper()}" for name in Settings.model_fields}
    files = [p for p in DEPLOY.rglob("*") if p.is_file()] + [ROOT / ".dockerignore"]
    used: dict[str, set[str]] = {}
    for path in files:
        for name in re.findall(r"\bSHOPSEARCH_[A-Z0-9_]+\b", path.read_text()):
            used.setdefault(name, set()).add(path.name)
    unknown = {name: sorted(where) for name, where in used.items() if name not in settings}
    assert not unknown, f"not settings in shared/settings.py: {unknown}"
    # the names production relies on are all there
    for name in ("SHOPSEARCH_DATABASE_URL", "SHOPSEARCH_REDIS_URL", "SHOPSEARCH_RAY_ADDRESS",
                 "SHOPSEARCH_SECRET_KEY", "SHOPSEARCH_RUN_TASK_RUNNER", "SHOPSEARCH_DATA_DIR"):
        assert name in used, name


# -- compose ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _compose_validator() -> jsonschema.protocols.Validator:
    text = (resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json").read_text()
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)  # type: ignore[no-any-return]


def test_compose_matches_the_compose_spec() -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _compose_validator().iter_errors(COMPOSE)]
    assert not errors, errors


@pytest.mark.parametrize("breakage", ["unknown key", "wrong type", "bad condition"])
def test_the_compose_schema_refuses_a_broken_file(breakage: str) -> None:
    broken = copy.deepcopy(COMPOSE)
    api = broken["services"]["api-1"]
    if breakage == "unknown key":
        api["comand"] = api.pop("command")
    elif breakage == "wrong type":
        api["volumes"] = "api-1-data:/var/lib/shopsearch"
    else:
        api["depends_on"]["migrate"]["condition"] = "service_done"
    assert list(_compose_validator().iter_errors(broken))


def test_compose_topology() -> None:
    services = COMPOSE["services"]
    assert {"postgres", "redis", "ray-head", "ray-worker", "migrate", "api-1", "api-2", "worker", "lb"} <= set(services)
    assert services["migrate"]["command"] == ["shopsearch", "db", "upgrade"]
    assert services["worker"]["command"][:2] == ["shopsearch", "worker"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    for name in ("api-1", "api-2"):
        api = services[name]
        assert api["command"][:4] == ["shopsearch", "serve", "--host", "0.0.0.0"]
        assert api["environment"]["SHOPSEARCH_RUN_TASK_RUNNER"] == "false"
        assert api["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "/ready" in " ".join(api["healthcheck"]["test"])
    for name in ("worker", "ray-head", "ray-worker"):
        assert services[name]["depends_on" if name != "ray-head" else "environment"], name
    assert services["worker"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    # one environment everywhere: the same database, Redis, Ray cluster and signing key
    envs = [s["environment"] for n, s in services.items() if n not in ("postgres", "redis", "lb")]
    for key in ("SHOPSEARCH_DATABASE_URL", "SHOPSEARCH_REDIS_URL", "SHOPSEARCH_RAY_ADDRESS", "SHOPSEARCH_SECRET_KEY"):
        assert len({env[key] for env in envs}) == 1, key
    assert envs[0]["SHOPSEARCH_RAY_ADDRESS"].startswith("ray://ray-head:")
    assert "postgres:5432" in envs[0]["SHOPSEARCH_DATABASE_URL"] and "redis:6379" in envs[0]["SHOPSEARCH_REDIS_URL"]
    # healthchecks on everything long-running that serves something
    for name in ("postgres", "redis", "ray-head", "ray-worker", "api-1", "api-2", "lb"):
        assert services[name]["healthcheck"]["test"] and not services[name]["healthcheck"].get("disable"), name


def test_compose_references_resolve() -> None:
    services = COMPOSE["services"]
    volumes = set(COMPOSE.get("volumes") or {})
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).is_file(), (name, source)
            else:
                assert source in volumes, (name, source)
        if "build" in service:
            context = (DEPLOY / service["build"]["context"]).resolve()
            assert context == ROOT and (context / service["build"]["dockerfile"]).is_file()
    data_mounts = {m.split(":")[1] for n in ("api-1", "ray-head", "ray-worker") for m in services[n]["volumes"]}
    assert data_mounts == {DATA_DIR}


def test_the_balancer_spreads_over_both_api_instances() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    upstream = re.search(r"upstream\s+(\w+)\s*\{(.*?)\}", conf, flags=re.S)
    assert upstream
    servers = set(re.findall(r"^\s*server\s+([\w.-]+:\d+)", upstream.group(2), flags=re.M))
    assert servers == {"api-1:8000", "api-2:8000"}
    assert f"proxy_pass http://{upstream.group(1)};" in conf
    lb = COMPOSE["services"]["lb"]
    assert any(m.startswith("./nginx.conf:") for m in lb["volumes"])
    assert re.search(r"listen\s+8000;", conf) and lb["ports"] == ["8000:8000"]
    assert "/lb-health" in conf and "/lb-health" in " ".join(lb["healthcheck"]["test"])
    for name in ("api-1", "api-2"):
        assert COMPOSE["services"][name]["command"][-3:-2] == ["8000"] or "8000" in COMPOSE["services"][name]["command"]


# -- Dockerfile -------------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_non_root_with_a_healthcheck() -> None:
    instructions = _dockerfile()
    stages = [rest.split() for ins, rest in instructions if ins == "FROM"]
    assert len(stages) >= 2 and all(len(s) == 3 and s[1].upper() == "AS" for s in stages), stages
    names = [s[2] for s in stages]
    final = max(i for i, (ins, _) in enumerate(instructions) if ins == "FROM")
    last = instructions[final:]
    # the final stage copies the build stage's result, not the sources
    copied = [rest for ins, rest in last if ins == "COPY"]
    assert copied and all(rest.startswith("--from=") and rest.split()[0][7:] in names[:-1] for rest in copied)
    users = [rest for ins, rest in last if ins == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    health = [rest for ins, rest in last if ins == "HEALTHCHECK"]
    assert len(health) == 1 and "/health" in health[0] and "--interval" in health[0]
    env = " ".join(rest for ins, rest in last if ins == "ENV")
    assert f"SHOPSEARCH_DATA_DIR={DATA_DIR}" in env
    assert [rest for ins, rest in last if ins == "VOLUME"] == [json.dumps([DATA_DIR])]
    assert json.loads(next(rest for ins, rest in last if ins == "CMD"))[:2] == ["shopsearch", "serve"]


def test_the_image_gets_every_package_and_the_context_keeps_them() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    include = re.search(r"\[tool\.setuptools\.packages\.find\]\s*include\s*=\s*\[(.*?)\]", pyproject, flags=re.S)
    assert include
    packages = {p.strip().strip('"*') for p in include.group(1).split(",") if p.strip()}
    sources = {source for ins, rest in _dockerfile() if ins == "COPY" and not rest.startswith("--from")
               for source in rest.split()[:-1]}
    assert packages | {"pyproject.toml", "README.md"} <= sources, sources
    for source in sources:
        assert (ROOT / source).exists(), source
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for source in sources:
        assert source not in ignored and source.split("/")[0] not in ignored, source


# -- Kubernetes -------------------------------------------------------------------------------


def test_kustomization_lists_every_manifest() -> None:
    kustomization = _yaml(K8S / "kustomization.yaml")
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    assert {d["metadata"].get("namespace", kustomization["namespace"]) for _, d in K8S_DOCS
            if d["kind"] != "Namespace"} == {kustomization["namespace"]}


@pytest.mark.parametrize(("name", "doc"), [(n, d) for n, d in K8S_DOCS if d["kind"] != "RayCluster"],
                         ids=[n for n, d in K8S_DOCS if d["kind"] != "RayCluster"])
def test_manifest_matches_the_kubernetes_schema(name: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_kubernetes_schema_refuses_a_broken_manifest() -> None:
    broken = copy.deepcopy(_kind("Deployment", "shopsearch-api"))
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/ready"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    broken = copy.deepcopy(_kind("HorizontalPodAutoscaler"))
    broken["spec"]["minReplicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def _strict(schema: Any) -> Any:
    """The CRD schema as the API server applies it to us: fields it does not declare are refused
    (it would prune them silently; here they are errors), except where it preserves unknown fields."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _raycluster_errors(doc: dict[str, Any]) -> list[str]:
    schema = _strict(json.loads(RAYCLUSTER_SCHEMA.read_text()))
    schema["properties"]["metadata"] = {"type": "object"}  # checked by Kubernetes itself
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    spec = doc["spec"]
    for template in [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]:
        wrapper = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"}, "template": template}
        try:
            kubernetes_validate.validate(wrapper, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            errors.append(str(exc))
    return errors


def _ray_start_args(params: dict[str, str], head: bool) -> list[str]:
    """``rayStartParams`` as KubeRay turns them into ``ray start`` flags (pod.go convertParamMap)."""
    args = ["ray", "start", "--head" if head else "--address=head:6379", "--block"]
    for key, value in sorted(params.items()):
        if value.lower() in ("true", "false") and key not in ("log-color", "include-dashboard", "include-log-monitor"):
            if value.lower() == "true":
                args.append(f"--{key}")
        else:
            args.append(f"--{key}={value}")
    return args


def test_raycluster_matches_kuberays_crd_and_autoscales() -> None:
    doc = _kind("RayCluster")
    assert not _raycluster_errors(doc)
    spec = doc["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    # the image pins the Ray that KubeRay is told about
    pins = [rest.split("=", 1)[1] for ins, rest in _dockerfile() if ins == "ARG" and rest.startswith("RAY_VERSION=")]
    assert pins == [spec["rayVersion"]]
    assert any('"ray[default]==${RAY_VERSION}"' in rest for ins, rest in _dockerfile() if ins == "RUN")
    parse_command(_ray_start_args(spec["headGroupSpec"]["rayStartParams"], head=True))
    for group in spec["workerGroupSpecs"]:
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"] and group["maxReplicas"] > group["minReplicas"]
        parse_command(_ray_start_args(group["rayStartParams"], head=False))
    for _, container in _k8s_containers():
        if container["name"].startswith("ray-"):
            env = {e["name"]: e["value"] for e in container["env"]}
            assert env["SHOPSEARCH_DATA_DIR"] == DATA_DIR
            assert {m["mountPath"] for m in container["volumeMounts"]} >= {DATA_DIR, "/dev/shm"}
            # HTTP probes of our own: older operators' default probes run wget, not in the image
            for probe in ("readinessProbe", "livenessProbe"):
                assert container[probe]["httpGet"] == {"path": "/api/healthz", "port": 52365}


def test_the_raycluster_check_refuses_a_broken_cluster() -> None:
    doc = _kind("RayCluster")
    broken = copy.deepcopy(doc)
    broken["spec"]["workerGroupSpecs"][0]["maxReplica"] = 10
    assert _raycluster_errors(broken)
    broken = copy.deepcopy(doc)
    broken["spec"]["enableInTreeAutoscaling"] = "yes"
    assert _raycluster_errors(broken)
    broken = copy.deepcopy(doc)
    broken["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["imag"] = "x"
    assert _raycluster_errors(broken)
    with pytest.raises(NotACommand):
        parse_command(_ray_start_args({"num-cpu": "0"}, head=True))


def test_kubernetes_topology() -> None:
    config = _kind("ConfigMap")
    secret = _kind("Secret")
    raycluster = _kind("RayCluster")
    api = _kind("Deployment", "shopsearch-api")
    worker = _kind("Deployment", "shopsearch-worker")
    service = _kind("Service", "shopsearch-api")
    hpa = _kind("HorizontalPodAutoscaler")
    job = _kind("Job")
    # every container of ours reads the same settings
    for doc in (api, worker, job):
        pod = doc["spec"]["template"]["spec"]
        refs = {next(iter(r)): next(iter(r.values()))["name"] for r in pod["containers"][0]["envFrom"]}
        assert refs == {"configMapRef": config["metadata"]["name"], "secretRef": secret["metadata"]["name"]}
        assert pod["securityContext"]["runAsNonRoot"] is True
    assert {"SHOPSEARCH_DATABASE_URL", "SHOPSEARCH_SECRET_KEY"} <= set(secret["stringData"])
    assert config["data"]["SHOPSEARCH_RAY_ADDRESS"].startswith(f"ray://{raycluster['metadata']['name']}-head-svc.")
    assert config["data"]["SHOPSEARCH_RAY_ADDRESS"].endswith(":10001")
    container = api["spec"]["template"]["spec"]["containers"][0]
    assert {e["name"]: e["value"] for e in container["env"]}["SHOPSEARCH_RUN_TASK_RUNNER"] == "false"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert api["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert api["spec"]["replicas"] >= 2
    labels = api["spec"]["template"]["metadata"]["labels"]
    assert api["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] in [p["name"] for p in container["ports"]]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "shopsearch-api"}
    assert hpa["spec"]["minReplicas"] >= 2 and hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
    assert worker["spec"]["template"]["spec"]["containers"][0]["command"][:2] == ["shopsearch", "worker"]
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["shopsearch", "db", "upgrade"]


# -- Ray cluster launcher ---------------------------------------------------------------------


def test_ray_cluster_config_passes_rays_own_validation() -> None:
    # the same check `ray up` makes: defaults filled in, ray-schema.json, then Ray's own rules
    validate_config(fillout_defaults(copy.deepcopy(CLUSTER)))
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(CLUSTER, schema)
    head = CLUSTER["available_node_types"][CLUSTER["head_node_type"]]
    assert head["resources"] == {"CPU": 0}  # no shard actors on the head
    assert any(f":{DATA_DIR}" in option for option in CLUSTER["docker"]["run_options"])


@pytest.mark.parametrize("breakage", ["unknown key", "head type", "wrong type"])
def test_the_ray_check_refuses_a_broken_config(breakage: str) -> None:
    broken = copy.deepcopy(CLUSTER)
    if breakage == "unknown key":
        broken["available_node_types"]["ray.worker.memory"]["min_worker"] = 1
    elif breakage == "head type":
        broken["head_node_type"] = "ray.nothing"
    else:
        broken["max_workers"] = "eight"
    with pytest.raises((jsonschema.ValidationError, ValueError)):
        validate_config(fillout_defaults(broken))
