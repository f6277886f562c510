"""Named, expiring API tokens, stored hashed, for notebooks and scripts (``Authorization: Token <key>``)."""
