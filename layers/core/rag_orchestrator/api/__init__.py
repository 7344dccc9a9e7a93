"""HTTP surface: create_app(), routers, auth, SSE encoding, error handlers."""
