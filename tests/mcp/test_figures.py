"""docs/mcp.md's figures are the ones `tools/gen_mcp.py --figures` measures now."""

from __future__ import annotations

import pytest

from tool_scripts import gen_mcp


@pytest.mark.eval
def test_the_documented_figures_are_current():
    gen = gen_mcp()
    documented = gen.documented_figures(gen.DOC.read_text(encoding="utf-8"))
    assert documented, "docs/mcp.md has no figures block"
    assert documented == gen.figures(), "run `python tools/gen_mcp.py --figures` into docs/mcp.md"
