"""domain/filters: the limits it checks beyond Connexion are the spec's."""

from __future__ import annotations

import pytest

from memory_bank.domain import filters
from memory_bank.errors import InvalidRequest
from memory_bank.spec import load_spec


def test_a_filter_names_at_most_the_tags_the_spec_allows():
    allowed = load_spec()["components"]["parameters"]["TagFilter"]["schema"]["maxItems"]
    assert filters.max_tags() == allowed
    assert len(filters.parse([f"t{i}" for i in range(allowed)]).tags) == allowed
    with pytest.raises(InvalidRequest) as refused:
        filters.parse([f"t{i}" for i in range(allowed + 1)])
    assert refused.value.field == "tag"
    assert str(allowed) in str(refused.value)
