"""Every scenario at once: shoppers (search, suggest, click events; ``storefront.py``) and, one in
eleven users, a merchant writing documents (``management.py``).

    python -m loadtests.setup_tenant --host http://127.0.0.1:8000 --products 5000 --out /tmp/loadtest-tenant.json
    LOADTEST_TENANT=/tmp/loadtest-tenant.json locust -f loadtests/locustfile.py --headless -u 11 -r 11 -t 60s

``--host`` defaults to the server the tenant was made on. Pick scenarios by class name
(``locust -f loadtests/locustfile.py Shopper``) or run one file alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `locust -f loadtests/…` puts only this folder on sys.path: the checkout too, for `loadtests.*`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadtests.management import Merchant  # noqa: E402
from loadtests.storefront import Shopper  # noqa: E402

__all__ = ["Merchant", "Shopper"]
