"""An index without a mapping (or with ``"dynamic": true``) infers its mapping from the documents it
receives (issue 36, item 1): searchable, visible, extended by later documents, conflicts reported in
the upload's task; an explicit mapping infers nothing."""

from __future__ import annotations

from typing import Any

from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant, search, upload, wait_task

PHONE = {"id": "1", "name": "Apple iPhone 7 128GB", "price": 649, "inStock": True, "tags": ["phone", "apple"],
         "released": "2016-09-16", "specs": {"ram": "2GB"}, "sizes": [4.7, 5.5]}
CASE = {"id": "2", "name": "Leather case", "price": 19.5, "inStock": False, "tags": ["case"], "released": "2017-01-02"}


def bare_index(client: Any, tenant: Any, name: str = "nomap") -> dict[str, Any]:
    response = client.post(tenant.url(), json={"name": name}, headers=tenant.headers)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def mapping_of(client: Any, tenant: Any, index_id: str) -> dict[str, Any]:
    response = client.get(tenant.url(index_id, "/mapping"), headers=tenant.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def ids(answer: dict[str, Any]) -> list[str]:
    return sorted(hit["id"] for hit in answer["hits"])


def test_an_index_without_a_mapping_infers_one_from_its_documents(app, client):
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    assert mapping_of(client, tenant, index["id"]) == {"idField": "id", "fields": {}, "dynamic": True}

    task = upload(client, tenant, index["id"], [PHONE, CASE])
    details = task["details"]
    assert details["received"] == 2 and details["indexed"] == 2
    assert details["fieldsAdded"] == [{"field": "name", "type": "text"}, {"field": "price", "type": "float"},
                                      {"field": "inStock", "type": "boolean"}, {"field": "tags", "type": "keyword[]"},
                                      {"field": "released", "type": "date"}]
    assert [(u["field"], u["path"]) for u in details["unmapped"]] == [("specs", "[0].specs"), ("sizes", "[0].sizes")]
    assert "conflicts" not in details
    rebuild = wait_task(client, tenant.headers, tenant.project_id, details["mappingTaskId"])
    assert (rebuild["type"], rebuild["status"]) == ("mapping.update", "succeeded")

    assert mapping_of(client, tenant, index["id"]) == {"idField": "id", "dynamic": True, "fields": {
        "name": {"type": "text", "searchable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "inStock": {"type": "boolean", "filterable": True, "facetable": True},
        "tags": {"type": "keyword[]", "searchable": True, "filterable": True, "facetable": True},
        "released": {"type": "date", "filterable": True, "sortable": True},
    }}
    # strings searchable, numbers filterable and sortable, booleans filterable, string arrays facets
    assert ids(search(client, tenant, index["id"], q="iphone")) == ["1"]
    assert ids(search(client, tenant, index["id"], q="leather")) == ["2"]
    assert ids(search(client, tenant, index["id"], q="", filters={"price": {"lt": 100}})) == ["2"]
    assert ids(search(client, tenant, index["id"], q="", filters={"inStock": True})) == ["1"]
    assert ids(search(client, tenant, index["id"], q="", filters={"released": {"gte": "2017-01-01"}})) == ["2"]
    ordered = search(client, tenant, index["id"], q="", sort="price:asc")
    assert [hit["id"] for hit in ordered["hits"]] == ["2", "1"]
    facets = search(client, tenant, index["id"], q="", facets=["tags"])["facets"]
    assert {f["value"]: f["count"] for f in facets["tags"]} == {"phone": 1, "apple": 1, "case": 1}
    # the fields not mapped are still stored and returned
    assert client.get(tenant.url(index["id"], "/documents/1"), headers=tenant.headers).json()["specs"] == {"ram": "2GB"}


def test_a_later_document_extends_the_mapping_and_earlier_ones_stay_searchable(app, client):
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    upload(client, tenant, index["id"], [{"id": "1", "name": "Galaxy phone"}])
    task = upload(client, tenant, index["id"], [{"id": "2", "name": "Pixel phone", "color": "crimson", "stock": 3}])
    assert task["details"]["fieldsAdded"] == [{"field": "color", "type": "text"}, {"field": "stock", "type": "float"}]
    assert wait_task(client, tenant.headers, tenant.project_id, task["details"]["mappingTaskId"])["status"] == "succeeded"
    assert set(mapping_of(client, tenant, index["id"])["fields"]) == {"name", "color", "stock"}
    assert ids(search(client, tenant, index["id"], q="phone")) == ["1", "2"]
    assert ids(search(client, tenant, index["id"], q="crimson")) == ["2"]
    assert ids(search(client, tenant, index["id"], q="", filters={"stock": {"gte": 1}})) == ["2"]
    # nothing new: no field added, no rebuild
    same = upload(client, tenant, index["id"], [{"id": "3", "name": "Nokia phone", "color": "blue"}])
    assert same["details"]["fieldsAdded"] == [] and "mappingTaskId" not in same["details"]
    assert ids(search(client, tenant, index["id"], q="blue")) == ["3"]


def test_a_conflicting_type_is_reported_in_the_task_and_the_document_kept(app, client):
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    upload(client, tenant, index["id"], [{"id": "1", "name": "Cheap cable", "price": 5}])
    task = upload(client, tenant, index["id"], [{"id": "2", "name": "Dear cable", "price": "call us"},
                                               {"id": "3", "name": "Odd cable", "price": 7, "tags": ["a"]},
                                               {"id": 4, "name": "Bad tags", "tags": "b", "price": 8.5}])
    details = task["details"]
    assert task["status"] == "succeeded" and details["indexed"] == 3
    assert details["fieldsAdded"] == [{"field": "tags", "type": "keyword[]"}]
    assert details["conflictCount"] == 1
    [conflict] = details["conflicts"]
    assert {k: conflict[k] for k in ("path", "field", "type", "id")} == {
        "path": "[0].price", "field": "price", "type": "float", "id": "2"}
    assert conflict["message"]
    # the price stays a number field; the document is stored and found by its name
    assert mapping_of(client, tenant, index["id"])["fields"]["price"]["type"] == "float"
    assert client.get(tenant.url(index["id"], "/documents/2"), headers=tenant.headers).json()["price"] == "call us"
    assert ids(search(client, tenant, index["id"], q="dear")) == ["2"]
    assert ids(search(client, tenant, index["id"], q="", filters={"price": {"gte": 0}})) == ["1", "3", "4"]
    # a conflict inside one upload: the first value decides
    mixed = upload(client, tenant, index["id"], [{"id": "5", "weight": True}, {"id": "6", "weight": "heavy"}])
    assert mixed["details"]["fieldsAdded"] == [{"field": "weight", "type": "boolean"}]
    assert [c["path"] for c in mixed["details"]["conflicts"]] == ["[1].weight"]


def test_an_explicit_mapping_infers_nothing(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    assert "dynamic" not in mapping_of(client, tenant, index["id"])
    task = upload(client, tenant, index["id"], [{"id": "1", "name": "Phone", "color": "crimson"}])
    assert set(task["details"]) == {"received", "indexed"}
    assert mapping_of(client, tenant, index["id"]) == PRODUCT_MAPPING
    assert search(client, tenant, index["id"], q="crimson")["total"] == 0
    wrong = client.post(tenant.url(index["id"], "/documents"), json=[{"id": "2", "price": "x"}], headers=tenant.headers)
    assert wrong.status_code == 400
    assert wrong.json()["error"]["code"] == "VALIDATION_ERROR"
    assert [d["path"] for d in wrong.json()["error"]["details"]] == ["[0].price"]
    # an explicit mapping with no fields infers nothing either
    empty = client.post(tenant.url(), json={"name": "empty", "mapping": {"fields": {}}}, headers=tenant.headers).json()
    upload(client, tenant, empty["id"], [{"id": "1", "name": "Phone"}])
    assert mapping_of(client, tenant, empty["id"])["fields"] == {}


def test_put_mapping_makes_it_explicit_unless_it_says_dynamic(app, client):
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    upload(client, tenant, index["id"], [{"id": "1", "name": "Galaxy phone", "brand": "Samsung"}])
    mapping = mapping_of(client, tenant, index["id"])
    # the inferred mapping is edited like any other: brand becomes a facetable keyword
    mapping["fields"]["brand"] = {"type": "keyword", "searchable": True, "facetable": True}
    put = client.put(tenant.url(index["id"], "/mapping"), json=mapping, headers=tenant.headers)
    assert put.status_code == 202, put.text
    assert wait_task(client, tenant.headers, tenant.project_id, put.json()["taskId"])["status"] == "succeeded"
    assert mapping_of(client, tenant, index["id"])["dynamic"] is True
    task = upload(client, tenant, index["id"], [{"id": "2", "name": "Pixel", "brand": "Google", "color": "red"}])
    assert task["details"]["fieldsAdded"] == [{"field": "color", "type": "text"}]
    facets = search(client, tenant, index["id"], q="", facets=["brand"])["facets"]
    assert {f["value"]: f["count"] for f in facets["brand"]} == {"Samsung": 1, "Google": 1}
    # a mapping without "dynamic" is explicit: new fields stay unmapped, wrong types are refused
    del mapping["dynamic"]
    put = client.put(tenant.url(index["id"], "/mapping"), json=mapping, headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, put.json()["taskId"])["status"] == "succeeded"
    task = upload(client, tenant, index["id"], [{"id": "3", "name": "Nokia", "weight": 100}])
    assert "fieldsAdded" not in task["details"]
    assert "weight" not in mapping_of(client, tenant, index["id"])["fields"]
    wrong = client.post(tenant.url(index["id"], "/documents"), json=[{"id": "4", "name": 5}], headers=tenant.headers)
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "VALIDATION_ERROR"
    bad = client.put(tenant.url(index["id"], "/mapping"), json={"fields": {}, "dynamic": "yes"}, headers=tenant.headers)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "VALIDATION_ERROR"


def test_a_new_field_in_a_live_index_is_indexed_for_the_documents_that_had_it(app, client):
    """A field stored before the index infers (the index made dynamic later) is searchable once a
    later upload maps it: the rebuild reads every stored document."""
    tenant = make_tenant(app)
    index = create_index(client, tenant, mapping={"fields": {"name": {"type": "text", "searchable": True}}})
    upload(client, tenant, index["id"], [{"id": "1", "name": "Phone", "color": "crimson"}])
    assert search(client, tenant, index["id"], q="crimson")["total"] == 0
    put = client.put(tenant.url(index["id"], "/mapping"),
                     json={"fields": {"name": {"type": "text", "searchable": True}}, "dynamic": True}, headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, put.json()["taskId"])["status"] == "succeeded"
    task = upload(client, tenant, index["id"], [{"id": "2", "name": "Cable", "color": "crimson red"}])
    assert task["details"]["fieldsAdded"] == [{"field": "color", "type": "text"}]
    assert ids(search(client, tenant, index["id"], q="crimson")) == ["1", "2"]


def test_a_replace_session_infers_the_new_catalogs_fields(app, client):
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    upload(client, tenant, index["id"], [{"id": "1", "name": "Old phone"}])
    session = client.post(tenant.url(index["id"], "/replace-sessions"), json={}, headers=tenant.headers).json()
    staged = client.post(tenant.url(index["id"], f"/replace-sessions/{session['id']}/documents"),
                         json=[{"id": "a", "title": "New kettle", "price": 3}, {"id": "b", "title": "Toaster", "price": "?"}],
                         headers=tenant.headers)
    assert staged.status_code == 200, staged.text
    answer = staged.json()
    assert answer["fieldsAdded"] == [{"field": "title", "type": "text"}, {"field": "price", "type": "float"}]
    assert [c["path"] for c in answer["conflicts"]] == ["[1].price"] and answer["documentCount"] == 2
    again = client.post(tenant.url(index["id"], f"/replace-sessions/{session['id']}/documents"),
                        json=[{"id": "c", "title": "Kettle lid", "price": 1}], headers=tenant.headers).json()
    assert again["fieldsAdded"] == [] and "conflicts" not in again
    session_now = client.get(tenant.url(index["id"], f"/replace-sessions/{session['id']}"), headers=tenant.headers).json()
    assert set(session_now["mapping"]["fields"]) == {"name", "title", "price"}
    commit = client.post(tenant.url(index["id"], f"/replace-sessions/{session['id']}/commit"), headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, commit.json()["taskId"])["status"] == "succeeded"
    assert ids(search(client, tenant, index["id"], q="kettle")) == ["a", "c"]
    assert search(client, tenant, index["id"], q="phone")["total"] == 0
    mapping = mapping_of(client, tenant, index["id"])
    assert mapping["dynamic"] is True and set(mapping["fields"]) == {"name", "title", "price"}
    assert ids(search(client, tenant, index["id"], q="", filters={"price": {"lte": 3}})) == ["a", "c"]
    # an explicit index's session stays as today: no report, wrong types refused
    explicit = create_index(client, tenant, name="explicit")
    other = client.post(tenant.url(explicit["id"], "/replace-sessions"), json={}, headers=tenant.headers).json()
    plain = client.post(tenant.url(explicit["id"], f"/replace-sessions/{other['id']}/documents"),
                        json=[{"id": "a", "name": "Kettle"}], headers=tenant.headers).json()
    assert plain == {"received": 1, "documentCount": 1}
    refused = client.post(tenant.url(explicit["id"], f"/replace-sessions/{other['id']}/documents"),
                          json=[{"id": "b", "price": "x"}], headers=tenant.headers)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "VALIDATION_ERROR"


def test_fields_inferred_while_a_replace_session_is_open_are_kept(app, client):
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    session = client.post(tenant.url(index["id"], "/replace-sessions"), json={}, headers=tenant.headers).json()
    staged = client.post(tenant.url(index["id"], f"/replace-sessions/{session['id']}/documents"),
                         json=[{"id": "a", "title": "Kettle"}], headers=tenant.headers).json()
    assert staged["fieldsAdded"] == [{"field": "title", "type": "text"}]
    # meanwhile an upload to the index brings a field, and a facet uses it
    live = upload(client, tenant, index["id"], [{"id": "1", "title": "Lamp", "labels": ["brass"]}])
    assert live["details"]["fieldsAdded"] == [{"field": "title", "type": "text"}, {"field": "labels", "type": "keyword[]"}]
    facets = client.put(tenant.url(index["id"], "/facets"), json={"facets": [{"field": "labels"}]}, headers=tenant.headers)
    assert facets.status_code == 200, facets.text
    commit = client.post(tenant.url(index["id"], f"/replace-sessions/{session['id']}/commit"), headers=tenant.headers)
    assert commit.status_code == 202, commit.text  # the session's mapping keeps the facet's field
    assert wait_task(client, tenant.headers, tenant.project_id, commit.json()["taskId"])["status"] == "succeeded"
    assert set(mapping_of(client, tenant, index["id"])["fields"]) == {"title", "labels"}
    assert ids(search(client, tenant, index["id"], q="kettle")) == ["a"]
    later = upload(client, tenant, index["id"], [{"id": "b", "title": "Stove", "labels": ["iron"]}])
    assert later["details"]["fieldsAdded"] == []
    assert ids(search(client, tenant, index["id"], q="", filters={"labels": ["iron"]})) == ["b"]


def test_a_dynamic_index_points_an_array_of_numbers_to_a_vector_field_and_checks_a_mapped_one(app, client):
    """An embedding sent to a dynamic index is stored, not mapped, with a hint to map it as a
    vector; once mapped, a wrong vector is a conflict that names the length expected."""
    tenant = make_tenant(app)
    index = bare_index(client, tenant)
    task = upload(client, tenant, index["id"], [{"id": "1", "name": "Lamp", "embedding": [0.1, 0.2, 0.3]}])
    [unmapped] = task["details"]["unmapped"]
    assert unmapped["field"] == "embedding" and '"dimensions": 3' in unmapped["message"]
    mapping = {**mapping_of(client, tenant, index["id"]), "dynamic": True}
    mapping["fields"]["embedding"] = {"type": "vector", "dimensions": 3}
    put = client.put(tenant.url(index["id"], "/mapping"), json=mapping, headers=tenant.headers)
    assert put.status_code in (200, 202), put.text
    if put.status_code == 202:
        assert wait_task(client, tenant.headers, tenant.project_id, put.json()["taskId"])["status"] == "succeeded"
    task = upload(client, tenant, index["id"], [{"id": "2", "name": "Desk", "embedding": [0.1, 0.2]}])
    [conflict] = task["details"]["conflicts"]
    assert conflict["path"] == "[0].embedding" and "expected 3 numbers" in conflict["message"]
