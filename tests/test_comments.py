"""Measurements live in docs with the command and date that made them, never in the code's
comments or docstrings, where they go stale unseen."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memory_bank"
# A measured time: "7 ms", "0.3-0.4 ms", "6 µs", "5 s at 100k" (sizes such as a 1 MiB chunk
# are settings, not measurements).
MEASURED = re.compile(
    r"\b\d[\d.,]*(?:\s?-\s?\d[\d.,]*)?\s?(?:ms|µs|us)\b"
    r"|\b\d[\d.,]*\s?s\s(?:at|a|per|of|for)\b"
)


def _prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring-like string of a module."""
    found: list[tuple[int, str]] = []
    previous = tokenize.INDENT
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT or (
            token.type == tokenize.STRING
            and previous
            in {
                tokenize.INDENT,
                tokenize.NEWLINE,
                tokenize.NL,
                tokenize.DEDENT,
            }
        ):
            found.append((token.start[0], token.string))
        if token.type not in {tokenize.COMMENT, tokenize.NL}:
            previous = token.type
    return found


def measured_in_prose(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a module that carry a measured figure."""
    return [(line, text) for line, text in _prose(source) if MEASURED.search(text)]


def test_no_comment_or_docstring_carries_a_measurement():
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {text.strip()[:80]}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in measured_in_prose(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_check_sees_comments_and_docstrings_but_not_code():
    source = '''"""Module, 3 ms here."""
x = "a log message, about 30 s"  # took 0.5 ms
def f():
    """Runs 5 s at 100k."""
    return "7 ms"
'''
    lines = [line for line, _ in measured_in_prose(source)]
    assert lines == [1, 2, 4]
