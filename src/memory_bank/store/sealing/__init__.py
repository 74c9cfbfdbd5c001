"""Encryption at rest: the master key, owners' data keys, sealed columns, converting data."""
