"""The memory panel: static files served at /, the one-time sign-in link, panel CLI hooks."""
