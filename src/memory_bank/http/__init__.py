"""HTTP plumbing: ASGI middleware, Connexion validators and error handlers."""
