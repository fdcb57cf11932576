"""Users: the accounts that sign in, belong to organizations and create keys (the bottom of the
account domains: auth, org and api_key stand on it)."""
