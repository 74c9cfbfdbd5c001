"""Alembic migrations for memory-bank."""
