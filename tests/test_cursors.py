"""Hostile list cursors (issue 9, item 8): whatever a cursor decodes to, every list answers 400
``VALIDATION_ERROR`` on ``cursor``, never 500."""

from __future__ import annotations

import base64

from control_plane.wire import encode_cursor
from tests.factories import bearer
from tests.index.helpers import create_index, make_tenant

HOSTILE = [
    encode_cursor(str(10**40)),  # an integer no database column holds
    encode_cursor(str(2**63)),
    encode_cursor("²"),  # str.isdigit() says yes, int() says no
    encode_cursor("٣"),
    encode_cursor("-1"),
    encode_cursor("a\x00b"),  # PostgreSQL text holds no NUL
    encode_cursor("99999-01-01T00:00:00", "x"),
    encode_cursor("2024-01-01T00:00:00+25:00", "x"),
    encode_cursor("2024-01-01T00:00:00\x00", "x"),
    encode_cursor("2024-01-01T00:00:00", "a\x00"),
    base64.urlsafe_b64encode(b"\xff\xfe").decode(),  # not UTF-8
    "%%%",
]


def test_hostile_cursors_answer_400_on_every_list(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    org_id = tenant.account.org_id
    user = bearer(tenant.account.token)
    lists = [
        (f"/v1/projects/{tenant.project_id}/tasks", tenant.headers),
        (f"/v1/projects/{tenant.project_id}/indices", tenant.headers),
        (tenant.url(index["id"], "/documents"), tenant.headers),
        (tenant.url(index["id"], "/profiles"), tenant.headers),
        (f"/v1/projects/{tenant.project_id}/api-keys", user),
        ("/v1/orgs", user),
        (f"/v1/orgs/{org_id}/members", user),
        (f"/v1/orgs/{org_id}/projects", user),
        ("/v1/auth/sessions", user),
    ]
    text_keyed = {lists[i][0] for i in (1, 2, 3)}  # indices, documents, profiles: one text key
    for url, headers in lists:
        assert client.get(url, headers=headers).status_code == 200, url
        for cursor in HOSTILE:
            response = client.get(url, params={"cursor": cursor}, headers=headers)
            # a text key may be any text: a number is a valid (empty) position there
            refused = url not in text_keyed or cursor not in HOSTILE[:5]
            assert response.status_code == (400 if refused else 200), (url, cursor, response.text)
            if refused:
                error = response.json()["error"]
                assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == "cursor", (url, cursor)
