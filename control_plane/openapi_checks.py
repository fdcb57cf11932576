"""What a route checks beyond the JSON Schema of its request: rules that depend on stored state (a
field of the index's mapping, a token that was issued, the rules of an index) or that JSON Schema
cannot say (distinct terms, a date range). The OpenAPI document lists them with each operation's
400 answer, as ``x-checked-beyond-schema`` (input → rule) and in its description, so a client
generated from the document knows every reason a well-formed request may be refused.

An input is named as the first part of an error's ``details[].path``: a body property (``filters``
for ``filters.brand``), a query parameter (``cursor``), or ``[]`` for the items of a bare array
(``[3].price``). The fuzz test holds every 400 a schema-valid request gets to this list.
"""

from __future__ import annotations

CURSOR = "the `nextCursor` of the previous page of this list"
FILTERS = (
    "fields of the mapping that are filterable or facetable (for a public key: those the profile exposes), "
    "each value of the field's type; nested at most 6 levels, at most 64 conditions in all"
)
PROFILE_FIELDS = {
    "queryFields": "searchable text, keyword or keyword[] fields of the mapping",
    "filters": FILTERS,
    "facets": "facetable fields of the mapping, at most 20 different",
    "filterFields": "filterable or facetable fields of the mapping",
    "sortOptions": "keys unique; each `sort` entry a sortable field of the mapping (or `_score`), `:asc` or `:desc`",
    "defaultSort": "the `key` of one of `sortOptions`",
    "retrieve": "fields of the mapping, or its `idField`",
    "highlight": "text, keyword or keyword[] fields of the mapping",
    "boosts": "integer or float fields of the mapping",
    "distinct": "a keyword field of the mapping that is filterable or facetable",
    "typoTolerance": "`minWordSizeTwoTypos` at least `minWordSizeOneTypo`",
    "semantic": "`field` a vector field of the mapping",
}
SEARCH = {
    "q": "at most 32 words",
    "filters": FILTERS,
    "facets": "facetable fields of the mapping (for a public key: those the profile facets on)",
    "sort": "the `key` of one of the profile's `sortOptions`",
    "page": "`page` × `perPage` (the profile's when left out) at most 1000",
    "near": "sent when the sort option asked for orders by distance (`FIELD:near`)",
    "vector": "as many numbers as the profile's `semantic.field` holds (a profile with a semantic setting only)",
    "similarTo": "a document of the index holding a vector in the profile's `semantic.field` (else the index's "
                 "only vector field); `q` empty",
}
RULE = {
    "conditions": "each pattern holds a letter or digit",
    "filters": "field values and ranges only (no `and`, `or`, `not`), as " + FILTERS,
    "validity": "each window's `from` before its `until`",
    "consequence": "at least one effect; each filter as in searches (boost and bury filters name a field); "
    "`redirect` an http(s) URL or a path from `/`, no spaces; `replaceQuery` not blank; `userData` at most 10000 "
    "bytes as JSON, nested at most 32 levels; no document pinned twice, no two pins at one position",
}
SYNONYM = {
    "terms": "multiway: at least 2 different terms (case, accents and plurals folded)",
    "input": "oneway",
    "synonyms": "oneway: at least 1 term, none the `input` (case, accents and plurals folded)",
}
TERMS = "each term holds a letter or digit, at most 100 characters and 5 words once its spaces are collapsed"
DOCUMENTS = (
    "each document holds the mapping's `idField` (a non-empty string or an integer, not starting with "
    "`__shopsearch`), each mapped field a value of its type; nested at most 32 levels, at most the plan's bytes "
    "per document (100 KiB by default)"
)
MAPPING_ID = "the `idField`, when mapped, is a `keyword`"
FACET_FIELD = "a `keyword` or `keyword[]` field of the mapping that is facetable"
EMAIL = ("an address a mailbox could have (RFC 5322 as email-validator reads it): a dotted domain, not "
         "`localhost`, `.local`, `.invalid`, `.onion` or `.arpa`")

INDEX = "/v1/projects/{project_id}/indices/{index_id}"
LISTS = (
    "/v1/auth/sessions", "/v1/orgs", "/v1/orgs/{org_id}/members", "/v1/orgs/{org_id}/projects",
    "/v1/projects/{project_id}/api-keys", "/v1/projects/{project_id}/indices", "/v1/projects/{project_id}/tasks",
    f"{INDEX}/documents", f"{INDEX}/profiles", f"{INDEX}/synonyms", f"{INDEX}/rules", f"{INDEX}/suggestions/custom",
)


def _each(rules: dict[str, str]) -> str:
    return "; ".join(f"`{name}`: {rule}" for name, rule in rules.items())


CHECKED_BEYOND_SCHEMA: dict[str, dict[str, str]] = {
    **{f"GET {path}": {"cursor": CURSOR} for path in LISTS},
    "GET /v1/auth/verify-email": {"token": "a token of a verification email, unused and not expired"},
    "POST /v1/auth/reset-password": {"token": "a token of a reset email, unused and not expired"},
    "POST /v1/auth/change-password": {"currentPassword": "the account's password"},
    "POST /v1/auth/register": {"email": EMAIL},
    "POST /v1/orgs/{org_id}/members": {"email": EMAIL},
    "POST /v1/projects/{project_id}/api-keys": {
        "allowedOrigins": "each `scheme://host[:port]`, or `https://*.domain` for its subdomains",
        "expiresAt": "in the future",
    },
    "POST /v1/projects/{project_id}/indices": {"mapping": MAPPING_ID},
    f"PUT {INDEX}/mapping": {"fields": MAPPING_ID},
    f"PUT {INDEX}/facets": {
        "facets": "facetable fields of the mapping, each once; a range facet on an integer, float or date field, "
        "with its ranges and no size or sort; a terms facet without ranges",
    },
    f"PUT {INDEX}/feed": {"url": "an http(s) URL whose host resolves to a public address (unless the operator "
                          "allows private ones)"},
    f"POST {INDEX}/documents": {"[]": DOCUMENTS},
    f"POST {INDEX}/replace-sessions": {"mapping": MAPPING_ID},
    f"POST {INDEX}/replace-sessions/{{session_id}}/documents": {"[]": DOCUMENTS + " (the session's mapping)"},
    f"POST {INDEX}/profiles": PROFILE_FIELDS,
    f"PUT {INDEX}/profiles/{{profile_id}}": PROFILE_FIELDS,
    # an inline profile's faults are PROFILE_INVALID with paths inside it, as a saved profile's
    f"POST {INDEX}/search": {**PROFILE_FIELDS, **SEARCH, "profileKey": "a profile of this index"},
    "POST /v1/search/{profile_key}": SEARCH,
    f"POST {INDEX}/facet-values": {"field": FACET_FIELD, "filters": FILTERS,
                                   "profileKey": "a profile of this index"},
    "POST /v1/search/{profile_key}/facet-values": {"field": FACET_FIELD + " (one the profile facets on)",
                                                    "filters": FILTERS,
                                                    "profileKey": "left out: the storefront takes its profile from the path",
                                                    "profile": "left out: the storefront takes its profile from the path"},
    "POST /v1/multi-search": {"queries": "each query as the body of its own route (a search, or a facet value "
                              "search with `facetValues`), its `profileKey` a profile the key may search"},
    f"POST {INDEX}/synonyms": {name: f"{rule}; {TERMS}" for name, rule in SYNONYM.items()},
    f"PUT {INDEX}/synonyms/{{synonym_id}}": {name: f"{rule}; {TERMS}" for name, rule in SYNONYM.items()},
    f"POST {INDEX}/synonyms/import": {
        "items": "each entry as the body of POST synonyms: " + _each(SYNONYM) + "; " + TERMS,
        "solr": "Solr synonyms text, each line an entry as the body of POST synonyms",
    },
    f"POST {INDEX}/rules": RULE,
    f"PUT {INDEX}/rules/{{rule_id}}": RULE,
    f"PUT {INDEX}/rules/order": {"ids": "every rule of the index, each once"},
    # a draft `rule`'s faults have paths inside it, as a saved rule's
    f"POST {INDEX}/rules/test": {
        **RULE,
        **{name: SEARCH[name] for name in ("q", "page")},
        "filters": SEARCH["filters"] + " (a draft rule's: " + RULE["filters"] + ")",
        "profileKey": "a profile of this index",
    },
    f"PUT {INDEX}/suggestions/config": {
        "sources": "fields of the mapping marked `suggest`, each once",
        "products": "`profileKey`: a profile of this index",
    },
    f"POST {INDEX}/suggestions/custom": {"text": "a letter or digit"},
    f"GET {INDEX}/analytics": {"from": "a date (UTC) not after `to`, at most 366 days before it", "to": "a date"},
}

