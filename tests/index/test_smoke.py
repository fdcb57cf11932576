from tests.index.helpers import create_index, make_tenant, products, search, upload


def test_end_to_end(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    task = upload(client, tenant, index["id"], products(50))
    assert task["details"]["indexed"] == 50
    answer = search(client, tenant, index["id"], q="phone")
    assert answer["total"] == 25
    got = client.get(tenant.url(index["id"]), headers=tenant.headers).json()
    assert got["documentCount"] == 50
