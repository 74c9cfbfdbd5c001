"""Reading an export file back: each line decoded, parsed and checked as the REST save checks a
body, so a bad line is a message naming its field, never a traceback or a failed write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO

from jsonschema import Draft4Validator

from memory_bank.cli.common import CliError
from memory_bank.domain import bodies, transfer
from memory_bank.errors import ApiError, InvalidRequest
from memory_bank.http import jsontext
from memory_bank.http.validation import describe, draft4_schema, field_of
from memory_bank.ids import is_id
from memory_bank.spec import inline, load_spec, operations
from memory_bank.store import api_keys, owners

# The operation whose request body an exported memory is checked as (the REST save), and the
# parameter whose schema its source is checked with too (the source filter: a source stored is
# one the filter can ask for).
SAVE = "postMemory"
SOURCE_FILTER = ("getMemory", "source")
# What both engines store: MariaDB's DATETIME runs from year 1000 to 9999.
EARLIEST = datetime(1000, 1, 1)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999000)

Check = Callable[[dict[str, Any]], str | None]
ValueCheck = Callable[[Any], str | None]


class BadLine(Exception):
    """A line that cannot be imported; the message names the field."""


@dataclass(frozen=True)
class Line:
    """One memory line of an export: its number, and the memory or what is wrong with it."""

    number: int
    memory: transfer.Restored | None
    problem: str | None


@dataclass(frozen=True)
class Checks:
    """The REST save's checks, read from the spec: a save body's, and a stored source's."""

    body: Check
    source: ValueCheck


def save_checks() -> Checks:
    """The spec's checks an exported memory passes: the postMemory body (content, tags,
    contexts) and the source filter's parameter (the source)."""
    spec = load_spec()
    found = {op.id: op for op in operations(spec)}
    body = found[SAVE].definition["requestBody"]["content"]["application/json"]["schema"]
    op_id, name = SOURCE_FILTER
    params = inline(spec, [*found[op_id].shared_parameters, *found[op_id].definition["parameters"]])
    source = next(p["schema"] for p in params if p["name"] == name and p["in"] == "query")
    body_check = _validator(spec, body, SAVE)
    source_check = _validator(spec, source, f"{op_id} {name}")

    def check_body(value: dict[str, Any]) -> str | None:
        error = next(iter(body_check.iter_errors(value)), None)
        return None if error is None else describe(error, _export_field(field_of(error)))

    def check_source(value: Any) -> str | None:
        error = next(iter(source_check.iter_errors(value)), None)
        if error is not None:
            return describe(error, "source")
        try:
            # The REST save stores its key's source: one a key may carry, no other (the key's
            # rule lives with the keys; it is private there until it is named for this use).
            api_keys.check_name("'source'", value, required=True)
        except ValueError as exc:
            return f"{exc}."
        return None

    return Checks(check_body, check_source)


def _validator(spec: dict[str, Any], schema: dict[str, Any], what: str) -> Draft4Validator:
    """A draft 4 validator of one of the spec's schemas, as Connexion checks it."""
    converted = draft4_schema(inline(spec, schema))
    if converted is None:
        raise AssertionError(f"the {what} schema cannot be checked as draft 4")
    return Draft4Validator(converted)


def _export_field(field: str | None) -> str | None:
    """A save body's field as an export line names it (a citation's ids sit in `citation`)."""
    if field is None:
        return None
    head, _, last = field.rpartition(".")
    if head.startswith("contexts.") and last in ("conversation_id", "message_id"):
        return f"{head}.citation.{last}"
    return field


def read_export(handle: BinaryIO) -> Iterator[Line]:
    """Check the header (a CliError when the file is no export), then each memory line."""
    checks = save_checks()
    head = _header(handle.readline())
    if head.get("version") != transfer.VERSION:
        raise CliError(
            f"line 1: export format version {head.get('version')!r}; "
            f"this memory-bank reads version {transfer.VERSION}"
        )
    for number, raw in enumerate(handle, start=2):
        try:
            text = _text(raw)
            if text.strip():
                yield Line(number, parse_line(text, checks), None)
        except BadLine as exc:
            yield Line(number, None, str(exc))


def _header(raw: bytes) -> dict[str, Any]:
    """The export's first line, or a CliError saying the file is not an export."""
    expected = f'an export starts with {{"format": "{transfer.FORMAT}", "version": 1, ...}}'
    try:
        head = _json(_text(raw).removeprefix("\ufeff"))
    except BadLine as exc:
        raise CliError(f"line 1: not a memory-bank export: {exc} ({expected})") from None
    if not isinstance(head, dict) or head.get("format") != transfer.FORMAT:
        raise CliError(f"line 1: not a memory-bank export ({expected})")
    return head


def _text(raw: bytes) -> str:
    """A line as text; BadLine where it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1}"
        raise BadLine(f"The line is not UTF-8 text ({byte}).") from None


def _json(text: str) -> Any:
    """A line's JSON value, read by the REST API's own parser (depth, digits, surrogates)."""
    try:
        return jsontext.parse(text)
    except InvalidRequest as exc:
        # Its wording speaks of a request body; here the body is the line.
        raise BadLine(exc.detail.replace("The body", "The line", 1)) from None


def parse_line(text: str, checks: Checks) -> transfer.Restored:
    """One exported memory, checked with the REST save's rules; BadLine says what is wrong."""
    item = _json(text)
    if not isinstance(item, dict):
        raise BadLine("The line must be a JSON object (one memory).")
    if not isinstance(item.get("id"), str) or not is_id(item["id"], "mem"):
        raise BadLine("'id' must be a memory id (mem_ and 26 characters).")
    contexts = item.get("contexts")
    contexts = [] if contexts is None else contexts
    if not isinstance(contexts, list):
        raise BadLine("'contexts' must be an array.")
    body = {k: item[k] for k in ("content", "tags") if item.get(k) is not None}
    body["contexts"] = [_new_context(pos, c) for pos, c in enumerate(contexts)]
    problem = checks.body(body)
    if problem is None:
        problem = "'source' is required." if "source" not in item else checks.source(item["source"])
    if problem is not None:
        raise BadLine(problem)
    for pos, c in enumerate(contexts):
        if not isinstance(c.get("id"), str) or not is_id(c["id"], "mctx"):
            raise BadLine(f"'contexts.{pos}.id' must be a context id (mctx_ and 26 characters).")
    author = item.get("created_by")
    author = None if author in (None, "") else author
    problem = None if author is None else author_problem(author, "'created_by'")
    if problem is not None:
        raise BadLine(problem)
    try:
        new = bodies.new_memory(body)
    except ApiError as exc:  # a rule the save's parsing applies beyond the spec's schema
        raise BadLine(exc.detail) from None
    return transfer.Restored(
        id=item["id"],
        content=new.content,
        tags=new.tags,
        source=item["source"],
        created_at=_time(item.get("created_at"), "created_at"),
        updated_at=_time(item.get("updated_at"), "updated_at"),
        contexts=new.contexts,
        context_ids=[c["id"] for c in contexts],
        context_times=[
            _time(c.get("created_at"), f"contexts.{pos}.created_at")
            for pos, c in enumerate(contexts)
        ],
        created_by=author,
    )


def author_problem(value: Any, name: str) -> str | None:
    """Why a value cannot be an org memory's author (a user id, as a key's user id must be)."""
    if not isinstance(value, str):
        return f"{name} must be a string."
    try:
        api_keys.check_name(name, value, required=True)
    except ValueError as exc:
        return f"{exc}."
    if owners.is_org(value):
        return f"{name} must be a user id, not an org's owner key."
    return None


def _new_context(pos: int, ctx: Any) -> dict[str, Any]:
    """An exported context as the save body's context (the citation's ids lifted out)."""
    if not isinstance(ctx, dict):
        raise BadLine(f"'contexts.{pos}' must be an object.")
    citation = ctx.get("citation")
    if citation is not None and not isinstance(citation, dict):
        raise BadLine(f"'contexts.{pos}.citation' must be an object or null.")
    new = {k: ctx[k] for k in ("snippet", "origin") if k in ctx}
    for name in ("conversation_id", "message_id"):
        if citation is not None and citation.get(name) is not None:
            new[name] = citation[name]
    return new


def _time(value: Any, name: str) -> datetime:
    """An export's timestamp (ISO 8601 with its zone) as the store keeps it: UTC, no zone, ms."""
    shape = f"'{name}' must be a time like 2026-12-02T09:31:54.123Z"
    if not isinstance(value, str):
        raise BadLine(f"{shape}.")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadLine(f"{shape}.") from None
    if parsed.utcoffset() is None:
        raise BadLine(f"{shape} (with its time zone).")
    outside = BadLine(f"'{name}' must be between the years 1000 and 9999 (UTC).")
    try:
        utc = parsed.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise outside from None
    utc = utc.replace(microsecond=utc.microsecond // 1000 * 1000)
    if not EARLIEST <= utc <= LATEST:
        raise outside
    return utc
