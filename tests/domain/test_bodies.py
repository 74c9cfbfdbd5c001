"""Each body shape parsed once: trimmed text, tags once each, 415 for a body that is not JSON."""

from __future__ import annotations

import pytest

from memory_bank.domain import bodies
from memory_bank.errors import UnsupportedMediaType


def test_a_save_is_trimmed_and_keeps_each_tag_once_in_order():
    new = bodies.new_memory(
        {
            "content": "  We dropped Acme  ",
            "tags": [" vendors", "acme", "vendors ", "acme"],
            "contexts": [{"snippet": " why ", "conversation_id": " c1 ", "origin": "import"}],
            "scope": "org",
            "dedupe": "skip",
        }
    )
    assert new.content == "We dropped Acme"
    assert new.tags == ["vendors", "acme"]
    assert [(c.snippet, c.conversation_id, c.message_id, c.origin) for c in new.contexts] == [
        ("why", "c1", None, "import")
    ]
    assert (new.scope, new.dedupe) == ("org", "skip")


def test_a_patch_changes_only_what_it_names():
    assert bodies.patch({"tags": ["a", " a"]}) == bodies.Change(tags=["a"])
    change = bodies.patch({"content": " new ", "contexts": [{"snippet": "s"}]})
    assert change.content == "new" and change.tags is None
    assert change.contexts is not None and len(change.contexts) == 1
    assert change.contexts[0]["snippet"] == "s" and change.contexts[0]["id"].startswith("mctx_")
    assert bodies.patch({}) == bodies.Change()


def test_a_reviewers_changes_fall_back_to_the_drafts_own():
    assert bodies.draft_changes(None, "draft", ["t"]) == ("draft", ["t"])
    assert bodies.draft_changes({"tags": ["x", "x "]}, "draft", ["t"]) == ("draft", ["x"])
    assert bodies.draft_changes({"content": " mine "}, "draft", ["t"]) == ("mine", ["t"])


@pytest.mark.parametrize("raw", [b"content=x", "text", None, ["content"]])
def test_a_body_that_is_not_an_object_is_415_naming_the_media_type(raw):
    with pytest.raises(UnsupportedMediaType, match="application/json"):
        bodies.new_memory(raw)
    with pytest.raises(UnsupportedMediaType, match="merge-patch"):
        bodies.patch(raw)
