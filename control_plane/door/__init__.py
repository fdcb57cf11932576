"""The one search door (``door.service``): every route that searches — storefront, multi-search,
facet values, secret, MCP, rules/test, suggest — enters here; and the secret routes that search
(``door.endpoints``). It stands above ``search`` (resolving and running a search) and
``suggestion`` (serving suggestions, which runs searches)."""
