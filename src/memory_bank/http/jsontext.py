"""Request JSON read safely: hostile text (deep nesting, endless numbers, lone UTF-16
surrogates) is a 400 that names the field, never a 500 or a stored string no database takes."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from memory_bank.errors import InvalidRequest

# Where _locate looks for the culprit of a RecursionError: deeper than any request body of
# the spec (a test compares), far below the interpreter's recursion limit (where json.loads
# gives up).
MAX_DEPTH = 32
# A \uD800-\uDFFF escape: the only way a lone surrogate gets into decoded JSON text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def parse(raw: str) -> Any:
    """The JSON value of a request body, or InvalidRequest naming where it breaks."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"The body is not valid JSON: {exc}", field="body") from None
    except RecursionError:
        # Named by the field that holds the nesting (content, not content.0.0.0...).
        field = _locate(raw)
        while field and field.rpartition(".")[2].isdigit():
            field = field.rpartition(".")[0] or None
        raise InvalidRequest(f"{_subject(field)} is nested too deeply.", field=field) from None
    except ValueError:
        # What json.loads raises beyond JSONDecodeError: an integer too long to convert.
        field = _locate(raw)
        raise InvalidRequest(
            f"{_subject(field)} has a number with too many digits.", field=field
        ) from None
    if _SURROGATE_ESCAPE.search(raw):
        field = lone_surrogate(value)
        if field is not None:
            raise InvalidRequest(unpaired_surrogate_message(field or None), field=field or None)
    return value


def unpaired_surrogate_message(field: str | None) -> str:
    """What to say about a string holding half a UTF-16 pair (no text of its own repeated)."""
    return (
        f"{_subject(field)} contains an unpaired UTF-16 surrogate (\\ud800-\\udfff); "
        "send valid Unicode text."
    )


def lone_surrogate(value: Any, path: str = "") -> str | None:
    """The dotted path of the first string (or key) holding a lone surrogate; None if none.

    "" stands for the value itself. A key is reported by the path of the object it is in.
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, str):
            if _has_surrogate(node):
                return where
        elif isinstance(node, dict):
            for key, item in reversed(list(node.items())):
                if _has_surrogate(str(key)):
                    return where
                stack.append((f"{where}.{key}" if where else str(key), item))
        elif isinstance(node, list):
            for index in range(len(node) - 1, -1, -1):
                stack.append((f"{where}.{index}" if where else str(index), node[index]))
    return None


def _has_surrogate(text: str) -> bool:
    """Whether a string holds a code point from U+D800 to U+DFFF."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _subject(field: str | None) -> str:
    """How a message names the place: the field, or the body."""
    return f"'{field}'" if field else "The body"


def _locate(raw: str) -> str | None:
    """The dotted path where JSON text nests past MAX_DEPTH or has an over-long number.

    Runs only on a body json.loads refused, so it may be slow; it never recurses.
    """
    # Each open container: its path, and the key or index of the value being read in it.
    stack: list[tuple[str, str | int | None]] = []
    at = 0
    size = len(raw)

    def here() -> str:
        parts = [str(slot) for _, slot in stack if slot is not None]
        return ".".join(parts)

    while at < size:
        char = raw[at]
        if char in "{[":
            if len(stack) >= MAX_DEPTH:
                return here() or None
            stack.append(("{" if char == "{" else "[", None if char == "{" else 0))
            at += 1
        elif char in "}]":
            if stack:
                stack.pop()
            at += 1
        elif char == ",":
            if stack and stack[-1][0] == "[":
                index = stack[-1][1]
                stack[-1] = ("[", (index if isinstance(index, int) else 0) + 1)
            at += 1
        elif char == '"':
            found = _STRING.match(raw, at)
            end = found.end() if found else size
            if stack and stack[-1][0] == "{" and raw[end:].lstrip().startswith(":"):
                try:
                    key = str(json.loads(raw[at:end]))
                except ValueError:
                    key = "?"
                stack[-1] = ("{", "?" if _has_surrogate(key) else key)
            at = end
        elif char == "-" or char.isdigit():
            found = _NUMBER.match(raw, at)
            end = found.end() if found else at + 1
            token = raw[at:end].lstrip("-")
            # Python refuses to turn longer digit strings into an int (floats parse anyway).
            if token.isdigit() and len(token) > sys.get_int_max_str_digits():
                return here() or None
            at = end
        else:
            at += 1
    return here() or None
