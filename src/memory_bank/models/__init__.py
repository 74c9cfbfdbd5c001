"""Embedding models: getting, building, checking and loading them, and the providers that embed."""
