"""`memory-bank users export|import|erase`: a user's data lifecycle, from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TextIO

from jsonschema import Draft4Validator
from tqdm import tqdm

from memory_bank.cli.common import CliError, open_database
from memory_bank.domain import transfer
from memory_bank.domain.memories import parse_new_memory
from memory_bank.http.validation import describe, draft4_schema, field_of
from memory_bank.ids import is_id
from memory_bank.settings import Settings
from memory_bank.spec import load_spec

EXIT_BAD_LINES = 1
BATCH = 200


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write the user's export (the API's ndjson) to stdout."""
    engine = open_database(settings)
    count = -1
    for line in transfer.export_lines(engine, args.user):
        sys.stdout.write(line)
        count += 1
    sys.stdout.flush()
    print(f"exported {count} memories of {args.user}", file=sys.stderr)
    return 0


def _new_memory_check() -> Callable[[dict[str, Any]], list[str]]:
    """The API's own rules for a save body (the spec's NewMemory), as a list of problems."""
    spec = load_spec()
    schema = draft4_schema(_resolved(spec, spec["components"]["schemas"]["NewMemory"]))
    assert schema is not None
    validator = Draft4Validator(schema)

    def check(body: dict[str, Any]) -> list[str]:
        return [describe(e, field_of(e)) for e in validator.iter_errors(body)]

    return check


def _resolved(spec: dict[str, Any], node: Any) -> Any:
    """A schema with its local $refs replaced by what they name."""
    if isinstance(node, list):
        return [_resolved(spec, item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target: Any = spec
        for step in node["$ref"].removeprefix("#/").split("/"):
            target = target[step]
        return _resolved(spec, target)
    return {key: _resolved(spec, value) for key, value in node.items()}


def _time(value: Any, name: str) -> datetime:
    """An export's timestamp (ISO 8601, UTC)."""
    if not isinstance(value, str):
        raise ValueError(f"'{name}' must be a time")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.utcoffset() is None:
        raise ValueError(f"'{name}' must name its time zone")
    # As the store keeps times: UTC without a zone.
    return parsed.astimezone(UTC).replace(tzinfo=None)


def parse_line(raw: str, check: Callable[[dict[str, Any]], list[str]]) -> transfer.Restored:
    """One exported memory, checked with the API's rules; ValueError says what is wrong."""
    try:
        item = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(item, dict):
        raise ValueError("not a JSON object")
    if not is_id(str(item.get("id", "")), "mem"):
        raise ValueError("'id' must be a memory id (mem_...)")
    contexts = item.get("contexts") or []
    if not isinstance(contexts, list) or not all(isinstance(c, dict) for c in contexts):
        raise ValueError("'contexts' must be a list of objects")
    body = {
        "content": item.get("content"),
        "tags": item.get("tags") or [],
        "contexts": [
            {
                "snippet": c.get("snippet"),
                "conversation_id": (c.get("citation") or {}).get("conversation_id"),
                "message_id": (c.get("citation") or {}).get("message_id"),
                "origin": c.get("origin"),
            }
            for c in contexts
        ],
    }
    problems = check(body)
    if problems:
        raise ValueError(problems[0])
    source = item.get("source")
    if not isinstance(source, str) or not 1 <= len(source) <= 128:
        raise ValueError("'source' must be a string of 1-128 characters")
    for pos, c in enumerate(contexts):
        if not is_id(str(c.get("id", "")), "mctx"):
            raise ValueError(f"'contexts.{pos}.id' must be a context id (mctx_...)")
    content, tags, new_contexts = parse_new_memory(body)
    return transfer.Restored(
        id=item["id"],
        content=content,
        tags=tags,
        source=source,
        created_at=_time(item.get("created_at"), "created_at"),
        updated_at=_time(item.get("updated_at"), "updated_at"),
        contexts=new_contexts,
        context_ids=[c["id"] for c in contexts],
        context_times=[
            _time(c.get("created_at"), f"contexts.{pos}.created_at")
            for pos, c in enumerate(contexts)
        ],
    )


def read_export(
    handle: TextIO,
) -> Iterator[tuple[int, transfer.Restored | None, str | None]]:
    """(line number, memory or None, problem or None) for each memory line after the header."""
    check = _new_memory_check()
    first = handle.readline()
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("format") != transfer.FORMAT:
        raise CliError(f"line 1: not a memory-bank export (no {transfer.FORMAT} header)")
    if head.get("version") != transfer.VERSION:
        raise CliError(
            f"line 1: export format version {head.get('version')!r}; "
            f"this memory-bank reads version {transfer.VERSION}"
        )
    for number, raw in enumerate(handle, start=2):
        if not raw.strip():
            continue
        try:
            yield number, parse_line(raw, check), None
        except (ValueError, TypeError, AttributeError) as exc:
            yield number, None, str(exc)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Check every line of an export, then write the good ones (none when a line is bad,
    unless --skip-bad); ids already there are skipped, so importing twice is harmless."""
    with open(args.file, encoding="utf-8") as handle:
        parsed = list(read_export(handle))
    engine = open_database(settings)
    good = [(n, m) for n, m, _ in parsed if m is not None]
    bad = [(n, why) for n, m, why in parsed if m is None]
    ids = [m.id for _, m in good]
    taken = transfer.taken_by_others(engine, args.user, ids)
    seen: set[str] = set()
    kept: list[transfer.Restored] = []
    for number, item in good:
        assert item is not None
        if item.id in taken:
            bad.append((number, f"id {item.id} belongs to another user"))
        elif item.id in seen:
            bad.append((number, f"id {item.id} appears twice"))
        else:
            seen.add(item.id)
            kept.append(item)
    for number, why in sorted(bad):
        print(f"{args.file}:{number}: {why}", file=sys.stderr)
    if bad and not args.skip_bad:
        print(
            f"imported nothing: {len(bad)} bad line(s); fix them or pass --skip-bad",
            file=sys.stderr,
        )
        return EXIT_BAD_LINES
    written = 0
    with tqdm(total=len(kept), unit="memory", disable=args.quiet, file=sys.stderr) as bar:
        for start in range(0, len(kept), BATCH):
            chunk = kept[start : start + BATCH]
            written += transfer.restore(engine, args.user, chunk)
            bar.update(len(chunk))
    skipped = len(kept) - written
    print(
        f"imported {written} memories for {args.user}"
        + (f", {skipped} already there" if skipped else "")
        + (f", {len(bad)} bad line(s) skipped" if bad else ""),
        file=sys.stderr,
    )
    return 0


def cmd_erase(args: argparse.Namespace, settings: Settings) -> int:
    """Destroy the user's data key, then delete every row of theirs, after a confirmation."""
    engine = open_database(settings)
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError("erase cannot be undone: confirm on a terminal, or pass --yes")
        typed = input(f"Erase every memory and key of {args.user!r} for good? Type the user id: ")
        if typed.strip() != args.user:
            print("not erased", file=sys.stderr)
            return EXIT_BAD_LINES
    done = transfer.erase(engine, args.user)
    left = transfer.remaining(engine, args.user)
    if any(left.values()):
        raise CliError(f"rows of {args.user} remain: {left}", EXIT_BAD_LINES)
    shown = ", ".join(f"{name} {n}" for name, n in sorted(done.items()) if n)
    print(f"erased {args.user}: {shown or 'nothing was stored'}")
    return 0


def add_to(users_sub: argparse._SubParsersAction) -> None:
    """Add export, import and erase to `users`."""
    export = users_sub.add_parser("export", help="write a user's memories as ndjson to stdout")
    export.add_argument("user")
    export.set_defaults(func=cmd_export)
    imp = users_sub.add_parser("import", help="restore an export for a user (by id, idempotent)")
    imp.add_argument("user")
    imp.add_argument("file")
    imp.add_argument("--skip-bad", action="store_true", help="import the good lines anyway")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")
    imp.set_defaults(func=cmd_import)
    erase = users_sub.add_parser(
        "erase", help="destroy a user's data key, then every row of theirs (cannot be undone)"
    )
    erase.add_argument("user")
    erase.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    erase.set_defaults(func=cmd_erase)
