"""Set up a tenant for the Locust scenarios and write what they need to a JSON file.

    python -m loadtests.setup_tenant --host http://127.0.0.1:8000 --products 5000 --out /tmp/loadtest-tenant.json

Run it in the server's environment (the same ``SHOPSEARCH_DATABASE_URL``/``SHOPSEARCH_DATA_DIR``):
it creates the user, organization (enterprise plan, so plan quotas don't cut the load), project and
secret key with ``shopsearch tenants create``, then over HTTP signs in and creates a public key for
``--origin`` (public keys come from a signed-in session, never from a key), and through the Python
client (``shopsearch_client``) an index of the Best Buy catalog (``--products`` of it, expanded past
its size with ``benchmarks.common.expand``), the storefront facets and profile the benchmarks
measure, and autocomplete (name, brand and categories, rebuilt before it returns). The file holds
the keys: keep it private.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from shopsearch_client import Client, ShopsearchError

from benchmarks.common import STOREFRONT_FACETS, STOREFRONT_MAPPING, STOREFRONT_PROFILE, expand, load_products

ROOT = Path(__file__).resolve().parents[1]
SUGGEST_FIELDS = ("name", "brand", "categories")
MAPPING: dict[str, Any] = {
    **STOREFRONT_MAPPING,
    "fields": {name: {**spec, "suggest": True} if name in SUGGEST_FIELDS else spec
               for name, spec in STOREFRONT_MAPPING["fields"].items()},
}


def catalog(n: int) -> list[dict[str, Any]]:
    base = load_products()
    return base[:n] if n <= len(base) else expand(n)


def create_tenant(email: str, password: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``shopsearch tenants create … --plan enterprise --with-key full --json`` on the server's database
    (``env``: the server's settings; default this process's environment)."""
    command = [sys.executable, "-m", "cli.main", "tenants", "create", "--email", email, "--password", password,
               "--org", "loadtest", "--project", "loadtest", "--verified", "--plan", "enterprise",
               "--with-key", "full", "--json"]
    result = subprocess.run(command, cwd=ROOT, env=env if env is not None else os.environ.copy(), capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise SystemExit(f"shopsearch tenants create failed: {result.stderr or result.stdout}")
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _ok(response: httpx.Response, *statuses: int) -> dict[str, Any]:
    if response.status_code not in (statuses or (200, 201)):
        raise SystemExit(f"{response.request.method} {response.request.url.path}: {response.status_code} {response.text}")
    return response.json()  # type: ignore[no-any-return]


def setup(host: str, products: int, origin: str, shards: int = 2, env: dict[str, str] | None = None) -> dict[str, Any]:
    email, password = f"loadtest-{secrets.token_hex(4)}@shop.test", secrets.token_urlsafe(18)
    tenant = create_tenant(email, password, env)
    project_id, key = tenant["projectId"], tenant["key"]
    # sign-in and public keys are the cabinet's routes (no key may create a key): plain HTTP
    with httpx.Client(base_url=host, timeout=120) as anonymous:
        token = _ok(anonymous.post("/v1/auth/login", json={"email": email, "password": password}))["accessToken"]
        public = _ok(anonymous.post(f"/v1/projects/{project_id}/api-keys", headers={"Authorization": f"Bearer {token}"},
                                    json={"type": "public", "name": "loadtest shop", "allowedOrigins": [origin]}))
    with Client(host, key, timeout=300) as client:
        project = client.project(project_id)
        index = project.index(project.create_index("loadtest", shards=shards, mapping=MAPPING).id)
        docs = catalog(products)
        index.wait_for_tasks(index.upload_documents(docs), timeout=1800)
        index.update_facets(STOREFRONT_FACETS)
        profile = index.create_profile(STOREFRONT_PROFILE)
        config = index.update_suggestion_config({
            "enabled": True, "sources": [{"field": "name", "weight": 1}, {"field": "brand", "weight": 3},
                                         {"field": "categories", "weight": 2}]})
        index.wait_for_task(index.rebuild_suggestions(), timeout=600)
    return {"host": host, "projectId": project_id, "indexId": index.id, "secretKey": key,
            "publicKey": public["key"], "origin": origin, "profileKey": profile.profile_key,
            "suggestKey": config.suggest_key, "documents": len(docs)}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.setup_tenant",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="http://127.0.0.1:8000")
    parser.add_argument("--products", type=int, default=5000, help="catalog size (the Best Buy catalog, expanded)")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--origin", default="https://shop.example", help="the shop page's origin (public key)")
    parser.add_argument("--out", type=Path, default=Path("loadtest-tenant.json"))
    return parser


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        tenant = setup(args.host.rstrip("/"), args.products, args.origin, args.shards)
    except ShopsearchError as error:
        raise SystemExit(f"setting up the tenant failed: {error}") from error
    args.out.write_text(json.dumps(tenant, indent=2) + "\n")
    args.out.chmod(0o600)
    print(f"wrote {args.out}: index {tenant['indexId']}, {tenant['documents']} documents; "
          f"run: LOADTEST_TENANT={args.out} locust -f loadtests/locustfile.py …")


if __name__ == "__main__":
    main()
