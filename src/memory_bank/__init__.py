"""memory-bank: a self-hosted memory bank for AI agents."""

__version__ = "0.1.0"
