"""The memory domain: what a save, search, review or listing means, between handlers and storage."""
