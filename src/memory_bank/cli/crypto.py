"""`memory-bank crypto`: make a master key, rotate it, encrypt or decrypt what is stored."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from memory_bank.cli.common import EXIT_MASTER_KEY, CliError, open_database
from memory_bank.domain import encryption
from memory_bank.settings import PREFIX, Settings
from memory_bank.store.engine import is_sqlite
from memory_bank.store.sealing import crypto, data_keys, master_key, seal_existing

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


def cmd_rotate(args: argparse.Namespace, settings: Settings) -> int:
    """Re-wrap every data key under a new master key; resumable."""
    db = open_database(settings, with_keys=False)
    old = master_key.load_master(settings)
    if old is None:
        raise CliError(f"set {PREFIX}MASTER_KEY_FILE to the current (old) master key")
    new = crypto.read_master_key_file(args.new_key_file)
    if new.fingerprint == old.fingerprint:
        raise CliError("the new master key is the current one")
    with db.reading() as conn:
        # owners(master_id=X): the keys not wrapped by X.
        neither = set(data_keys.owners(conn, master_id=new.fingerprint)) & set(
            data_keys.owners(conn, master_id=old.fingerprint)
        )
    if neither:
        raise CliError(
            f"{len(neither)} data key(s) are wrapped by neither key: is "
            f"{PREFIX}MASTER_KEY_FILE the current master key?",
            EXIT_MASTER_KEY,
        )
    todo = encryption.pending_rotation(db, new)
    with tqdm(total=todo, unit="key", disable=args.quiet, file=sys.stderr) as bar:
        done = encryption.rotate_master(db, old, new, bar.update)
    print(f"re-wrapped {done} data key(s) under master key {new.fingerprint}")
    print(f"now restart the service with {PREFIX}MASTER_KEY_FILE={args.new_key_file}")
    return 0


def cmd_convert(args: argparse.Namespace, settings: Settings) -> int:
    """Seal every plain row (or, reversed, open every sealed one); resumable, online."""
    reverse = args.reverse or args.crypto_command == "decrypt-existing"
    db = open_database(settings)
    if db.keyring is None:
        raise CliError(f"set {PREFIX}MASTER_KEY_FILE: converting needs the master key")
    total = encryption.total_rows(db)
    with tqdm(total=total, unit="row", disable=args.quiet, file=sys.stderr) as bar:
        unfinished = encryption.convert(
            db, to_sealed=not reverse, batch=args.batch, pause=args.pause, progress=bar.update
        )
    if unfinished:
        print(f"{len(unfinished)} user(s) still have rows to convert: run again", file=sys.stderr)
        return 1
    tables = ", ".join(spec.table.name for spec in seal_existing.tables())
    if reverse:
        print(f"every row is plain again ({tables}) and no data key is left;")
        print(f"restart the service without {PREFIX}MASTER_KEY_FILE / {PREFIX}MASTER_KEY")
        return 0
    print(f"every row is encrypted ({tables})")
    if is_sqlite(db.engine):
        if encryption.compact(db):
            print("the database file was compacted: freed pages keep no plaintext")
        else:
            print(
                "warning: could not compact the database file (busy); stop the service and "
                "run encrypt-existing again to drop the plaintext left in freed pages",
                file=sys.stderr,
            )
    else:
        print(
            "earlier plaintext may linger in the server's free pages, logs and backups: "
            "see docs/security.md (OPTIMIZE TABLE, binary logs, old dumps)"
        )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `crypto init|rotate-master|encrypt-existing|decrypt-existing`."""
    parser = sub.add_parser("crypto", help="encryption at rest: master key and conversions")
    crypto_sub = parser.add_subparsers(dest="crypto_command", required=True, metavar="ACTION")
    init = crypto_sub.add_parser("init", help="write a new master key file (0600)")
    init.add_argument("--out", help=f"where to write it (default {DEFAULT_KEY_FILE})")
    init.set_defaults(func=cmd_init)
    rotate = crypto_sub.add_parser(
        "rotate-master", help="re-wrap every data key under a new master key (resumable)"
    )
    rotate.add_argument("--new-key-file", required=True, help="the new key (crypto init --out)")
    rotate.add_argument("--quiet", action="store_true", help="no progress bar")
    rotate.set_defaults(func=cmd_rotate)
    for name, text in (
        ("encrypt-existing", "encrypt every plain row, online, in batches (resumable)"),
        ("decrypt-existing", "decrypt every row and drop the data keys (recovery; stop serving)"),
    ):
        convert = crypto_sub.add_parser(name, help=text)
        convert.add_argument("--batch", type=int, default=encryption.BATCH, help="rows per batch")
        convert.add_argument(
            "--pause", type=float, default=0.0, help="seconds to wait between batches"
        )
        convert.add_argument("--quiet", action="store_true", help="no progress bar")
        if name == "encrypt-existing":
            convert.add_argument(
                "--reverse", action="store_true", help="the same as decrypt-existing"
            )
        convert.set_defaults(func=cmd_convert, reverse=False)
