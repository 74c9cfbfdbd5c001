"""The Makefile's first-run path: `make run` installs only what serving needs."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _recipe(target: str, tmp_path: Path) -> str:
    """What `make <target>` would run for a clone without a virtualenv (dry run)."""
    venv = tmp_path / "fresh-venv"
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", f"VENV={venv}", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_make_run_installs_only_what_serving_needs(tmp_path):
    # Installing the test and benchmark extras made a first `make run` take 6.5 minutes.
    recipe = _recipe("run", tmp_path)
    installs = [line for line in recipe.splitlines() if "pip install" in line]
    assert installs and all(
        re.search(r"pip install (--quiet )?(--no-compile )?-e \.$", i) for i in installs
    )
    assert "[dev" not in recipe and "bench" not in recipe and "apt-get" not in recipe
    assert "semantic" not in recipe
    assert recipe.rstrip().endswith("memory-bank serve")


def test_make_test_still_installs_everything(tmp_path):
    recipe = _recipe("test", tmp_path)
    assert "-e '.[dev,bench,semantic,redis]'" in recipe
    assert "chromium" in recipe and "mysqlclient" in recipe
    assert "pytest" in recipe


def test_ci_runs_the_test_command_the_readme_gives():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line.startswith("make ")]
    assert "make test" in commands
    # Not satisfied by `make test-fast` alone.
    assert re.search(r"^    make test(\s|$)", readme, re.MULTILINE)


def _pytest_arguments(recipe: str) -> list[list[str]]:
    """The arguments after `pytest` of each pytest run in a recipe, split as the shell would."""
    runs = [shlex.split(line) for line in recipe.splitlines() if "-m pytest" in line]
    return [run[run.index("pytest") + 1 :] for run in runs]


def test_make_test_fast_leaves_out_each_tier_and_needs_no_browser_or_driver(tmp_path):
    recipe = _recipe("test-fast", tmp_path)
    (arguments,) = _pytest_arguments(recipe)
    expression = arguments[arguments.index("-m") + 1]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    registered = {m.split(":")[0] for m in config["tool"]["pytest"]["ini_options"]["markers"]}
    tiers = {"mariadb", "model", "browser", "slow", "eval"}
    # pytest does not check the names in -m: a misspelt one would quietly select its tests.
    assert tiers <= registered
    assert set(expression.split(" and ")) == {f"not {tier}" for tier in tiers}
    assert "chromium" not in recipe and "mysqlclient" not in recipe


def test_make_test_selects_every_test(tmp_path):
    (arguments,) = _pytest_arguments(_recipe("test", tmp_path))
    assert not {"-m", "-k", "--deselect", "--ignore"} & set(arguments)


def test_the_readme_names_the_tiers_make_test_fast_leaves_out(tmp_path):
    (arguments,) = _pytest_arguments(_recipe("test-fast", tmp_path))
    expression = arguments[arguments.index("-m") + 1]
    left_out = {term.removeprefix("not ") for term in expression.split(" and ")}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = re.search(r"`make test-fast` leaves out the tests marked (.+?);", readme, re.DOTALL)
    assert sentence is not None
    named = set(re.findall(r"`(\w+)` \(", sentence.group(1)))
    assert named == left_out


def test_make_eval_runs_the_corpus_evaluations_and_only_them(tmp_path):
    (arguments,) = _pytest_arguments(_recipe("eval", tmp_path))
    assert arguments[arguments.index("-m") + 1] == "eval"
