"""Locust scenarios (``locust -f loadtests/locustfile.py``) and the tenant setup they read."""
