"""A memory's ETag and the If-Match precondition, read as RFC 9110 says (section 13.1.1).

If-Match is `*` or a list of entity tags (`"3"`, `W/"3"`, empty list elements allowed). It is
evaluated with the strong comparison: a weak tag never matches, and a tag matches only when it
is the current one character for character (`"3"`, not `3` or `"03"`). A value that is neither
is a 400 naming the header, never a 412: a client that cannot spell the header learns that,
instead of being told the memory changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_bank.errors import InvalidRequest, RevisionConflict

HEADER = "If-Match"
# entity-tag = [ W/ ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E / obs-text (%x80-FF).
_ENTITY_TAG = re.compile(r'(W/)?"([\x21\x23-\x7e\x80-\xff]*)"')
MALFORMED = (
    'If-Match must be "*" or a list of entity tags in double quotes, like "3" (the ETag as '
    "it was sent, quotes included)."
)


def etag(revision: int) -> str:
    """The ETag of a memory at this revision."""
    return f'"{revision}"'


@dataclass(frozen=True)
class IfMatch:
    """A parsed If-Match: any current state (`*`), or the strong tags it lists."""

    any: bool = False
    strong: frozenset[str] = frozenset()

    @classmethod
    def revision(cls, revision: int) -> IfMatch:
        """The precondition "still at this revision"."""
        return cls(strong=frozenset({str(revision)}))

    def matches(self, revision: int) -> bool:
        """Whether a memory at this revision meets the precondition (strong comparison)."""
        return self.any or str(revision) in self.strong

    def check(self, revision: int) -> None:
        """412 revision_conflict unless a memory at this revision meets the precondition."""
        if self.matches(revision):
            return
        raise RevisionConflict(
            f"The memory changed: it is at revision {revision} now. Fetch it, then retry "
            "with If-Match set to its current ETag.",
            extra={"revision": revision},
            headers={"ETag": etag(revision)},
        )


def parse_if_match(value: str | None) -> IfMatch | None:
    """The If-Match header's value (its field lines joined by commas) parsed; None when it
    was not sent, 400 invalid_request naming If-Match when it is malformed."""
    if value is None:
        return None
    text = value.strip(" \t")
    if text == "*":
        return IfMatch(any=True)
    strong: set[str] = set()
    found = 0
    pos = 0
    while True:
        # Empty list elements (`"1", , "2"`) are allowed and ignored (RFC 9110 5.6.1).
        while pos < len(text) and text[pos] in " \t,":
            pos += 1
        if pos == len(text):
            break
        tag = _ENTITY_TAG.match(text, pos)
        if tag is None:
            raise InvalidRequest(MALFORMED, field=HEADER)
        found += 1
        if tag.group(1) is None:
            strong.add(tag.group(2))
        pos = tag.end()
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] != ",":
            raise InvalidRequest(MALFORMED, field=HEADER)
    if found == 0:
        # An empty list names no state at all: almost surely an unset variable in the client.
        raise InvalidRequest(MALFORMED, field=HEADER)
    return IfMatch(strong=frozenset(strong))
