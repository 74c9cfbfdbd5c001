"""Storage: engine, tables, migrations and owner-scoped statements; every table write is here."""
