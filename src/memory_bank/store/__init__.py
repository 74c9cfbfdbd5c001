"""Storage: engine, tables, migrations and owner-scoped queries."""
