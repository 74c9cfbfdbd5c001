"""What every subcommand shares: user-facing errors, exit codes and opening the database."""

from __future__ import annotations

from functools import partial

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from memory_bank.domain.reindex import prepare
from memory_bank.settings import PREFIX, Secret, Settings
from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine
from memory_bank.store.sealing import master_key
from memory_bank.store.sealing.crypto import KeyProblem

EXIT_USAGE = 2
EXIT_DATABASE = 3
EXIT_MASTER_KEY = 4


class CliError(Exception):
    """A user-facing failure with its exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def safe_url(url: Secret | str) -> str:
    """The database URL without its password, for messages."""
    try:
        plain = url.reveal() if isinstance(url, Secret) else url
        return make_url(plain).render_as_string(hide_password=True)
    except Exception:
        return "<invalid URL>"


def open_database(
    settings: Settings, run_migrations: bool = True, *, with_keys: bool = True
) -> Database:
    """The configured database, migrated, its master key checked and sealing with it
    (with_keys); a clear error when unreachable or when the key is wrong or missing."""
    try:
        engine = make_engine(settings.database_url.reveal(), pool_size=2)
        database = partial(_database, settings=settings, with_keys=with_keys)
        if run_migrations:
            db = prepare(engine, database)
        else:
            with engine.connect():
                pass
            db = database(engine)
    except KeyProblem as exc:
        raise CliError(f"cannot start: {exc}", EXIT_MASTER_KEY) from None
    except DBAPIError as exc:
        raise CliError(
            f"cannot use the database at {safe_url(settings.database_url)}: "
            f"{type(exc.orig).__name__}: {str(exc.orig).splitlines()[0][:200]}",
            EXIT_DATABASE,
        ) from None
    except (ValueError, ArgumentError) as exc:
        raise CliError(f"bad {PREFIX}DATABASE_URL: {exc}") from None
    except ImportError as exc:
        raise CliError(
            f"bad {PREFIX}DATABASE_URL: its driver is not installed ({exc.name}); "
            "use sqlite:///path or mysql+pymysql://user:pass@host/db"
        ) from None
    except OSError as exc:
        raise CliError(
            f"cannot use the database at {safe_url(settings.database_url)}: {exc}",
            EXIT_DATABASE,
        ) from None
    return db


def _database(engine: Engine, settings: Settings, with_keys: bool) -> Database:
    """A Database over engine, sealing with the configured master key when with_keys."""
    return Database(
        engine, keyring=master_key.open_keyring(engine, settings) if with_keys else None
    )
