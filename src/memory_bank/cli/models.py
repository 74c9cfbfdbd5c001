"""`memory-bank models pull`: fetch and prepare a local model ahead of time (images, air-gapped
hosts), so a server never waits for it; `local:<folder>` then loads it offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from memory_bank.cli.common import CliError
from memory_bank.models import local_model, reference
from memory_bank.models.embeddings import DEFAULT_LOCAL, parse
from memory_bank.models.errors import EmbeddingsMisconfigured
from memory_bank.settings import Settings


class _Bar(local_model.Report):
    """Progress on the terminal: a bar on a TTY, a line per tenth otherwise."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._bar: tqdm[None] | None = None
        self._tty = sys.stderr.isatty()
        self._step = -1

    def downloading(self, done: int, total: int | None) -> None:
        if self._tty:
            if self._bar is None:
                self._bar = tqdm(total=total, unit="B", unit_scale=True, desc=self._name)
            self._bar.update(done - self._bar.n)
            return
        if total and done * 10 // total != self._step:
            self._step = done * 10 // total
            print(
                f"downloading {self._name}: {self._step * 10}% "
                f"({done / 1e6:.0f} of {total / 1e6:.0f} MB)",
                file=sys.stderr,
            )

    def building(self) -> None:
        self.close()
        print(f"building {self._name} as int8 ONNX (about 30 s)", file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _default_name(settings: Settings) -> str:
    """The model MEMORY_BANK_EMBEDDINGS names, when it names a local model; else `local`'s."""
    try:
        choice = parse(settings.embeddings)
    except EmbeddingsMisconfigured:
        return DEFAULT_LOCAL
    return choice.target if choice.kind == "local" else DEFAULT_LOCAL


def _pull(args: argparse.Namespace, settings: Settings) -> int:
    """Prepare the model (in the user's cache, or --dir) and check it against its reference."""
    name = args.name or _default_name(settings)
    chosen = local_model.plan(name, settings)
    bar = _Bar(chosen.name)
    try:
        if args.dir:
            folder = local_model.pull(name, settings, Path(args.dir), bar)
            files = local_model.Files(folder / "model.onnx", folder / "tokenizer.json")
        else:
            files = chosen.present() or chosen.prepare(bar)
        provider = local_model.provider(chosen, files)  # checked against its reference
    except EmbeddingsMisconfigured as exc:
        raise CliError(str(exc)) from None
    finally:
        bar.close()
    checked = ""
    if chosen.reference and reference.known(chosen.reference):
        worst = min(reference.cosines(provider, chosen.reference))
        checked = f"; reference check passed (cosine >= {worst:.3f} to the original model)"
    print(f"{chosen.model}: {files.model.parent}{checked}")
    if args.dir:
        print(f"use it with MEMORY_BANK_EMBEDDINGS=local:{Path(args.dir).resolve()}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `models` and its `pull`."""
    parser = subparsers.add_parser(
        "models",
        help="fetch and prepare local embedding models ahead of time",
        description="Local embedding models: `pull` downloads (and builds) one now, so a "
        "server never waits for it.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    pull = actions.add_parser(
        "pull",
        help="download, build and check a model (default: the configured local model)",
        description="Download a model's pinned files (resumable, checked against their "
        "sha256, through HTTPS_PROXY), build it if it needs building, and check its vectors "
        "against the original model's. Without --dir it goes to the user's cache, where "
        "MEMORY_BANK_EMBEDDINGS=local finds it; with --dir, a folder that "
        "MEMORY_BANK_EMBEDDINGS=local:<folder> loads offline.",
    )
    pull.add_argument(
        "name",
        nargs="?",
        help=f"{DEFAULT_LOCAL} (what `local` runs) or {local_model.MINILM}; default: the model "
        "MEMORY_BANK_EMBEDDINGS names",
    )
    pull.add_argument("--dir", help="write the model into this folder (for local:<folder>)")
    pull.set_defaults(func=_pull)
