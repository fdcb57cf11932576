import base64
import ipaddress
import itertools
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select

from control_plane.index import feed_fetch, feed_url
from control_plane.index.models import Index
from tests.factories import add_member
from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant, search, wait_task

FILES = {
    "/feed.json": json.dumps([{"sku": f"s{i}", "title": f"Feed phone {i}", "price": 5.0 + i} for i in range(12)]),
    "/feed.jsonl": "\n".join(json.dumps({"sku": f"j{i}", "title": f"Line laptop {i}"}) for i in range(4)),
    "/feed.csv": "sku,title,price,stock\nc1,Csv kettle,9.5,3\nc2,Csv toaster,19,0\n",
    "/broken.json": "[{",
}


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]] = []  # (path, headers) of every request, across servers

    def do_GET(self):  # noqa: N802
        self.seen.append((self.path, dict(self.headers)))
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = FILES.get(self.path.split("?")[0])
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def feed_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def allow_private(app, monkeypatch):
    monkeypatch.setattr(app.state.runtime.settings, "feed_allow_private_hosts", True)


def test_feed_url_rules(app, client, feed_server):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/feed")
    assert client.get(url, headers=tenant.headers).status_code == 404
    for bad in (f"{feed_server}/feed.json", "ftp://example.com/x.json", "http://10.1.2.3/x.json", "not a url",
                "http://[::1]/x"):
        response = client.put(url, json={"url": bad, "format": "json"}, headers=tenant.headers)
        assert response.status_code == 400, bad
        assert response.json()["error"]["details"][0]["path"] == "url"
    assert client.put(url, json={"url": "https://example.com/x", "format": "xml"}, headers=tenant.headers).status_code == 400
    assert client.put(url, json={"url": "https://example.com/x", "format": "json"}, headers=tenant.read_headers).status_code == 403
    nothing = client.post(url + "/sync", headers=tenant.headers)
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "CONFLICT"


def test_the_index_answer_carries_its_data_source(app, client):
    """A page showing an index asks it whether a data source exists (no 404 from GET feed to learn it)."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    assert index["feed"] is None
    assert client.get(tenant.url(index["id"]), headers=tenant.read_headers).json()["feed"] is None
    body = {"url": "https://user:pw@93.184.216.34/x.json?token=abc", "format": "json", "schedule": "daily"}
    put = client.put(tenant.url(index["id"], "/feed"), json=body, headers=tenant.headers)
    assert put.status_code == 200, put.text
    shown = client.get(tenant.url(index["id"]), headers=tenant.read_headers).json()["feed"]
    assert shown == put.json() and "pw" not in shown["url"] and shown["schedule"] == "daily"
    listed = client.get(f"/v1/projects/{tenant.project_id}/indices", headers=tenant.read_headers).json()["items"]
    assert [i["feed"] for i in listed if i["id"] == index["id"]] == [shown]
    assert client.delete(tenant.url(index["id"], "/feed"), headers=tenant.headers).status_code == 204
    assert client.get(tenant.url(index["id"]), headers=tenant.read_headers).json()["feed"] is None


def test_feed_sync_replaces_catalog(app, client, feed_server, allow_private):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    client.post(tenant.url(index["id"], "/documents"), json=[{"id": "old", "name": "old phone"}], headers=tenant.headers)
    url = tenant.url(index["id"], "/feed")
    body = {"url": f"{feed_server}/feed.json", "format": "json", "schedule": "daily", "fieldMap": {"sku": "id", "title": "name"}}
    response = client.put(url, json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    got = client.get(url, headers=tenant.read_headers).json()
    assert got["url"] == body["url"] and got["fieldMap"] == body["fieldMap"] and got["schedule"] == "daily"
    sync = client.post(url + "/sync", headers=tenant.headers)
    assert sync.status_code == 202
    task = wait_task(client, tenant.headers, tenant.project_id, sync.json()["taskId"])
    assert task["status"] == "succeeded", task
    assert task["type"] == "feed.sync" and task["details"]["received"] == 12
    answer = search(client, tenant, index["id"], q="phone", perPage=50)
    assert answer["total"] == 12 and "old" not in {h["id"] for h in answer["hits"]}
    assert client.get(url, headers=tenant.headers).json()["lastSyncAt"]
    # the field map's targets are uses of the mapping
    usage = client.get(tenant.url(index["id"], "/mapping/usage"), headers=tenant.headers).json()["fields"]
    assert usage["name"][0]["kind"] == "dataSource" and usage["name"][0]["path"] == "fieldMap.title"
    removed = {"idField": "id", "fields": {k: v for k, v in PRODUCT_MAPPING["fields"].items() if k != "name"}}
    broken = client.put(tenant.url(index["id"], "/mapping"), json=removed, headers=tenant.headers)
    assert broken.status_code == 409 and broken.json()["error"]["details"][0]["path"] == "feed.fieldMap.title"
    # jsonl and csv
    for path, expected, _q in (("/feed.jsonl", 4, "laptop"), ("/feed.csv", 2, "csv")):
        client.put(url, json={"url": f"{feed_server}{path}", "format": path.rsplit(".", 1)[1],
                              "fieldMap": {"sku": "id", "title": "name"}}, headers=tenant.headers)
        task = wait_task(client, tenant.headers, tenant.project_id,
                         client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
        assert task["status"] == "succeeded", task
        assert search(client, tenant, index["id"], q="")["total"] == expected
    assert client.get(tenant.url(index["id"], "/documents/c1"), headers=tenant.headers).json()["price"] == 9.5
    # a broken feed fails and leaves the catalog
    client.put(url, json={"url": f"{feed_server}/broken.json", "format": "json"}, headers=tenant.headers)
    task = wait_task(client, tenant.headers, tenant.project_id, client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
    assert task["status"] == "failed" and task["error"]["code"] == "VALIDATION_ERROR"
    client.put(url, json={"url": f"{feed_server}/missing.json", "format": "json"}, headers=tenant.headers)
    task = wait_task(client, tenant.headers, tenant.project_id, client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
    assert task["status"] == "failed"
    assert search(client, tenant, index["id"], q="")["total"] == 2
    assert client.delete(url, headers=tenant.headers).status_code == 204
    assert client.delete(url, headers=tenant.headers).status_code == 204
    assert client.get(url, headers=tenant.headers).status_code == 404


# --------------------------------------------------------------------------- where a feed may be fetched from
PUBLIC = "93.184.215.14"  # globally routable; the `dns` fixture never lets a test connect to it


class _Dns:
    def __init__(self) -> None:
        self.names: dict[str, object] = {}  # name -> callable returning the addresses of one lookup
        self.attempts: list[str] = []  # every address a socket tried to connect to


@pytest.fixture
def dns(monkeypatch):
    """Name resolution from a table (other names resolve as usual), and no connection leaves loopback."""
    stub = _Dns()
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.create_connection

    def getaddrinfo(host, port, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name not in stub.names:
            return real_getaddrinfo(host, port, *args, **kwargs)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (ip, int(port or 0), 0, 0)) if ":" in ip
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, int(port or 0)))
            for ip in stub.names[name]()
        ]

    def create_connection(address, *args, **kwargs):
        addresses = [info[4][0] for info in socket.getaddrinfo(address[0], address[1], 0, socket.SOCK_STREAM)]
        stub.attempts.extend(addresses)
        if not all(ipaddress.ip_address(a).is_loopback for a in addresses):
            raise ConnectionRefusedError("test guard: no connection leaves loopback")
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    return stub


@pytest.mark.parametrize(("address", "allowed"), [
    ("8.8.8.8", True), ("2606:4700::1111", True),
    ("::ffff:8.8.8.8", True), ("64:ff9b::808:808", True), ("2002:808:808::1", True),  # mapped, NAT64, 6to4 of public
    ("100.64.1.1", False), ("100.127.255.254", False),  # carrier-grade NAT
    ("10.0.0.1", False), ("172.16.0.1", False), ("192.168.1.1", False), ("127.0.0.1", False), ("0.0.0.0", False),
    ("169.254.169.254", False), ("198.18.0.1", False), ("192.0.0.170", False), ("192.0.2.1", False),
    ("224.0.0.1", False), ("233.1.1.1", False), ("240.0.0.1", False), ("255.255.255.255", False),
    ("::1", False), ("::", False), ("fe80::1", False), ("fc00::1", False), ("ff02::1", False), ("ff0e::1", False),
    ("2001:db8::1", False), ("2001::1", False),  # documentation, Teredo
    ("::ffff:127.0.0.1", False), ("::ffff:100.64.1.1", False),  # IPv4-mapped
    ("64:ff9b::a00:1", False), ("64:ff9b::6440:101", False), ("64:ff9b:1::a00:1", False),  # NAT64 of private
    ("2002:7f00:1::", False), ("2002:a00:1::", False),  # 6to4 of loopback / private
])
def test_only_globally_routable_addresses(address, allowed):
    assert feed_fetch.is_allowed_address(ipaddress.ip_address(address)) is allowed


def test_feed_hosts_must_be_globally_routable(app, client, dns):
    dns.names.update({
        "cgnat.test": lambda: ["100.64.1.1"],
        "mixed.test": lambda: [PUBLIC, "10.0.0.1"],  # one bad answer refuses the name
        "nat64.test": lambda: [PUBLIC, "64:ff9b::a9fe:a9fe"],  # NAT64 of the metadata address
        "public.test": lambda: [PUBLIC],
    })
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/feed")
    for bad in ("http://100.64.1.1/f.json", "http://cgnat.test/f.json", "https://mixed.test/f.json",
                "http://nat64.test/f.json", "http://[::ffff:127.0.0.1]/f.json", "http://[2002:7f00:1::]/f.json",
                "http://224.0.0.1/f.json", "http://169.254.169.254/latest", "http://0.0.0.0:8000/f.json",
                "http://198.18.0.1/f.json", "http://240.0.0.1/f.json"):
        response = client.put(url, json={"url": bad, "format": "json"}, headers=tenant.headers)
        assert response.status_code == 400, bad
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == "url", bad
    good = client.put(url, json={"url": "https://public.test/f.json", "format": "json"}, headers=tenant.headers)
    assert good.status_code == 200, good.text
    assert dns.attempts == []  # checking a URL connects nowhere


def test_dns_rebinding_can_not_reach_loopback(app, client, feed_server, dns):
    """A name that answers a public address for the first N lookups and loopback afterwards never gets
    the fetch to loopback: the fetch connects to an address it checked, or fails."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/feed")
    port = feed_server.rsplit(":", 1)[1]
    for public_answers in (1, 2, 3, 4, 5):
        name = f"rebind{public_answers}.test"
        lookups = itertools.count()
        dns.names[name] = lambda n=public_answers, c=lookups: [PUBLIC] if next(c) < n else ["127.0.0.1"]
        before = len(_Handler.seen)
        put = client.put(url, json={"url": f"http://{name}:{port}/feed.json", "format": "json"}, headers=tenant.headers)
        assert put.status_code == 200, put.text
        sync = client.post(url + "/sync", headers=tenant.headers)
        if sync.status_code == 400:  # the second check already saw loopback
            assert sync.json()["error"]["code"] == "VALIDATION_ERROR"
        else:
            assert sync.status_code == 202, sync.text
            task = wait_task(client, tenant.headers, tenant.project_id, sync.json()["taskId"])
            assert task["status"] == "failed", (public_answers, task)
            assert task["error"]["code"] in ("VALIDATION_ERROR", "FEED_UNAVAILABLE"), task
        assert len(_Handler.seen) == before, f"{public_answers} public answers: the loopback server was reached"
    assert PUBLIC in dns.attempts  # some fetch went to the address it had checked (and the guard stopped it)
    assert search(client, tenant, index["id"], q="")["total"] == 0


class _Internal(_Handler):
    seen: list[tuple[str, dict[str, str]]] = []


def test_each_redirect_hop_is_checked_and_host_kept(feed_server, dns, monkeypatch):
    """Only 127.0.0.1 counts as public here; 127.0.0.2 plays an internal host a redirect points to."""
    internal = ThreadingHTTPServer(("127.0.0.2", 0), _Internal)
    threading.Thread(target=internal.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(feed_fetch, "is_allowed_address", lambda address: str(address) == "127.0.0.1")
        dns.names.update({"shop.test": lambda: ["127.0.0.1"], "internal.test": lambda: ["127.0.0.2"]})
        port, internal_port = feed_server.rsplit(":", 1)[1], internal.server_address[1]
        body = feed_fetch.download(f"http://shop.test:{port}/redirect?to=/feed.json", allow_private=False)
        assert len(json.loads(body)) == 12
        assert _Handler.seen[-1][0] == "/feed.json" and _Handler.seen[-1][1]["Host"] == f"shop.test:{port}"
        with pytest.raises(feed_fetch.FeedError) as refused:
            feed_fetch.download(f"http://shop.test:{port}/redirect?to=http://internal.test:{internal_port}/feed.json",
                                allow_private=False)
        assert refused.value.code == "VALIDATION_ERROR"
        assert _Internal.seen == []
        # allowed private hosts: the same redirect is followed
        assert len(json.loads(feed_fetch.download(
            f"http://shop.test:{port}/redirect?to=http://internal.test:{internal_port}/feed.json", allow_private=True))) == 12
        assert _Internal.seen[-1][1]["Host"] == f"internal.test:{internal_port}"
    finally:
        internal.shutdown()


# --------------------------------------------------------------------------- feed URL secrets
SECRETS = ("s3cret-pass", "tok-abc123", "feed-user")


def _raw_feed(app, index_id):
    with app.state.runtime.sessions.begin() as db:
        return db.execute(select(Index.__table__.c.feed).where(Index.__table__.c.id == index_id)).scalar_one()


def test_feed_url_credentials_are_redacted_and_encrypted(app, client, feed_server, allow_private):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/feed")
    host = feed_server.split("//", 1)[1]
    full = f"http://feed-user:s3cret-pass@{host}/feed.json?token=tok-abc123&format=json"
    shown = f"http://***:***@{host}/feed.json?token=***&format=***"
    body = {"url": full, "format": "json", "fieldMap": {"sku": "id", "title": "name"}}
    put = client.put(url, json=body, headers=tenant.headers)
    assert put.status_code == 200, put.text
    assert put.json()["url"] == shown
    member = add_member(app, tenant.account, "member")
    for headers in (tenant.read_headers, member.headers, tenant.headers):
        got = client.get(url, headers=headers)
        assert got.status_code == 200 and got.json()["url"] == shown
    # at rest: only the redacted form in clear, the full URL encrypted under the service's secret key
    raw = _raw_feed(app, index["id"])
    assert not any(secret in json.dumps(raw) for secret in SECRETS)
    assert raw["url"] == shown
    assert feed_url.unseal(raw["sealedUrl"], app.state.runtime.settings.signing_key()) == full
    # sending the redacted form back keeps the stored URL; the sync fetches with the real credentials
    again = client.put(url, json={**body, "url": shown, "schedule": "daily"}, headers=tenant.headers)
    assert again.status_code == 200 and again.json()["schedule"] == "daily"
    sync = client.post(url + "/sync", headers=tenant.headers)
    task = wait_task(client, tenant.headers, tenant.project_id, sync.json()["taskId"])
    assert task["status"] == "succeeded", task
    path, headers = _Handler.seen[-1]
    assert path == "/feed.json?token=tok-abc123&format=json"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"feed-user:s3cret-pass").decode()
    for view in (client.get(tenant.url(index["id"]), headers=tenant.read_headers),
                 client.get(tenant.url(index["id"], "/mapping/usage"), headers=tenant.read_headers),
                 client.get(f"{tenant.tasks_url}/{sync.json()['taskId']}", headers=tenant.read_headers),
                 client.get(tenant.tasks_url, headers=member.headers)):
        assert view.status_code == 200 and not any(secret in view.text for secret in SECRETS), view.text
    # a new URL replaces the stored one
    client.put(url, json={**body, "url": f"{feed_server}/feed.json"}, headers=tenant.headers)
    assert feed_url.unseal(_raw_feed(app, index["id"])["sealedUrl"], app.state.runtime.settings.signing_key()) == \
        f"{feed_server}/feed.json"


def test_redaction_keeps_host_and_path():
    assert feed_url.redact("https://u:p@shop.example:8443/a/b.csv?k=v&flag#frag") == \
        "https://***:***@shop.example:8443/a/b.csv?k=***&***#***"
    assert feed_url.redact("https://token@shop.example/feed.json") == "https://***@shop.example/feed.json"
    assert feed_url.redact("https://shop.example/feed.json") == "https://shop.example/feed.json"


def test_https_certificate_is_checked_against_the_feed_host(dns, monkeypatch, tmp_path):
    """Connecting to the checked IP keeps TLS on the URL's name: SNI and certificate check use it."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shop.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("shop.test")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client_context = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
    monkeypatch.setattr(feed_fetch.httpx, "create_ssl_context", lambda **_: client_context)
    dns.names.update({"shop.test": lambda: ["127.0.0.1"], "other.test": lambda: ["127.0.0.1"]})
    port = server.server_address[1]
    try:
        assert len(json.loads(feed_fetch.download(f"https://shop.test:{port}/feed.json", allow_private=True))) == 12
        with pytest.raises(feed_fetch.FeedError) as wrong_name:  # same IP, a name the certificate doesn't cover
            feed_fetch.download(f"https://other.test:{port}/feed.json", allow_private=True)
        assert wrong_name.value.code == "FEED_UNAVAILABLE"
    finally:
        server.shutdown()
