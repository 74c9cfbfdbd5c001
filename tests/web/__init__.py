"""Tests of the panel, its sign-in and its routes (memory_bank.web)."""
