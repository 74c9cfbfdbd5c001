"""The memory panel: static files served at /, and the one-time sign-in it starts from."""
