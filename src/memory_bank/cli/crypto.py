"""`memory-bank crypto`: make a master key, rotate it, encrypt or decrypt what is stored."""

from __future__ import annotations

import argparse

from memory_bank.cli.common import CliError
from memory_bank.settings import PREFIX, Settings
from memory_bank.store import crypto

DEFAULT_KEY_FILE = "~/.config/memory-bank/master.key"


def cmd_init(args: argparse.Namespace, settings: Settings) -> int:
    """Write a new master key file (0600) and say how to use it and back it up."""
    path = args.out or settings.master_key_file or DEFAULT_KEY_FILE
    master = crypto.new_master_key()
    try:
        written = crypto.write_master_key_file(path, master)
    except FileExistsError:
        raise CliError(f"{path} exists; a master key is never overwritten (choose --out)") from None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc}") from None
    print(f"wrote a new master key to {written} (mode 0600, fingerprint {master.fingerprint})")
    print(f"turn encryption on with:  export {PREFIX}MASTER_KEY_FILE={written}")
    print(
        "Back this file up now, apart from the database's backups (a password manager, an "
        "offline copy): without it no encrypted memory can ever be read again, and with it "
        "next to a backup the backup is readable. See docs/security.md."
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `crypto init|rotate-master|encrypt-existing|decrypt-existing`."""
    parser = sub.add_parser("crypto", help="encryption at rest: master key and conversions")
    crypto_sub = parser.add_subparsers(dest="crypto_command", required=True, metavar="ACTION")
    init = crypto_sub.add_parser("init", help="write a new master key file (0600)")
    init.add_argument("--out", help=f"where to write it (default {DEFAULT_KEY_FILE})")
    init.set_defaults(func=cmd_init)
