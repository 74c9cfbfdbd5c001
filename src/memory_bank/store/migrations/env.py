"""Alembic environment: runs on the connection memory_bank.store.migrate hands over."""

from alembic import context

from memory_bank.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
