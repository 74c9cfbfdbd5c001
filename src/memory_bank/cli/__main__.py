"""`python -m memory_bank.cli`: the memory-bank command."""

import sys

from memory_bank.cli import main

sys.exit(main())
