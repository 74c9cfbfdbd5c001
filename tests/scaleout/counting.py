"""What a request sends to each backend server, from the servers' own status counters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

DATA = (
    "Com_select",
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_update_multi",
    "Com_delete",
    "Com_delete_multi",
    "Com_replace",
    "Com_replace_select",
)
REFRESH = ("Com_show_table_status", "Com_show_keys")
COUNTERS = ("Questions", *DATA, *REFRESH)


@dataclass
class Cost:
    """What one run of an operation sent: per backend, every statement and data statements."""

    everything: list[int]
    data: list[int]


class Counters:
    """The backends' global status counters, read over one connection each."""

    def __init__(self, urls: list[str]) -> None:
        self.engines = [sa.create_engine(u, isolation_level="AUTOCOMMIT") for u in urls]
        self.conns = [e.connect() for e in self.engines]
        # Reading the counters is itself a statement on each backend: measured, then left out.
        first = self._read()
        self.own = [
            q - p
            for q, p in zip(self._questions(self._read()), self._questions(first), strict=True)
        ]

    def _read(self) -> list[dict[str, int]]:
        names = ", ".join(f"'{n}'" for n in COUNTERS)
        return [
            {
                str(name): int(value)
                for name, value in conn.exec_driver_sql(
                    f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"
                )
            }
            for conn in self.conns
        ]

    @staticmethod
    def _questions(read: list[dict[str, int]]) -> list[int]:
        return [r["Questions"] for r in read]

    def cost(self, call: Callable[[], Any]) -> Cost:
        """What call() sends to each backend."""
        before = self._read()
        call()
        after = self._read()
        everything, data = [], []
        for k, (b, a) in enumerate(zip(before, after, strict=True)):
            refresh = sum(a[n] - b[n] for n in REFRESH)
            everything.append(a["Questions"] - b["Questions"] - self.own[k] - refresh)
            data.append(sum(a[n] - b[n] for n in DATA))
        return Cost(everything, data)

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        for engine in self.engines:
            engine.dispose()
