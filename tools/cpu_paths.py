"""Reference cosines of the local models on CPU paths other than this machine's, by emulation.

    python tools/cpu_paths.py                           # host and x86-64 AVX2, both models
    python tools/cpu_paths.py --paths haswell --models all-MiniLM-L6-v2
    python tools/cpu_paths.py prepare-arm64 /tmp/arm64  # an aarch64 Python with the runtime
    python tools/cpu_paths.py --arm64 /tmp/arm64        # adds the three ARM64 paths

onnxruntime picks its int8 matrix kernels by what the CPU says it has (x86: AVX2, AVX-VNNI or
AVX-512 VNNI; ARM64: plain NEON, dot product or i8mm), and an int8 model that is right on one
kernel can be wrong on another. Each path runs the same model files and tokenizer (search/
local_model.py's LocalProvider, unchanged) in a Python whose CPU qemu-user emulates, and
prints the cosine of each reference text's vector to the original fp32 model's: the texts
models/reference.py checks at start, and for all-mpnet-base-v2 the seven texts of
tests/models/data/mpnet_reference.json. A model passes at 0.98 (reference.MIN_COSINE).

Needs Debian's qemu-user (`apt-get install qemu-user`). x86-64 with VNNI is emulated only when
qemu-x86_64 can emulate AVX-VNNI or AVX-512 VNNI (Debian 12's qemu 7.2 can do neither: the
row says so); on a host that has VNNI, the host row is that path (its note lists the cpuid
bits). The ARM64 paths need `prepare-arm64` (Debian's arm64 Python 3.11 packages unpacked
into a directory, plus aarch64 wheels of onnxruntime, numpy and tokenizers at the versions
installed here) and root: onnxruntime's CPU detection reads /proc/cpuinfo, which
qemu 7.2 passes through from the x86 host, and crashes on it, so each ARM64 run sees an
ARM64 /proc/cpuinfo bind-mounted in a mount namespace of its own (`unshare -m`).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import json
import mmap
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
REFERENCES = SRC / "memory_bank" / "models" / "references.json"
MPNET_REFERENCE = ROOT / "tests" / "search" / "data" / "mpnet_reference.json"
MODELS = ("all-mpnet-base-v2", "all-MiniLM-L6-v2")
MIN_COSINE = 0.98
# --short keeps the reference texts up to this many characters: the short ones run the same
# int8 kernels in seconds, where the text that reaches the model's cut takes minutes emulated.
SHORT_CHARS = 300
# The aarch64 packages an unpacked Debian 12 Python 3.11 needs (the interpreter, its standard
# library, and the C libraries it and the wheels link to).
ARM64_DEBS = (
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libc6",
    "zlib1g",
    "libexpat1",
    "libssl3",
    "libffi8",
    "libbz2-1.0",
    "liblzma5",
    "libgcc-s1",
    "libstdc++6",
    "libsqlite3-0",
    "libuuid1",
    "libncursesw6",
    "libtinfo6",
    "libreadline8",
    "libcrypt1",
    "libnsl2",
    "libtirpc3",
    "libdb5.3",
    "libgssapi-krb5-2",
    "libkrb5-3",
    "libk5crypto3",
    "libkrb5support0",
    "libcom-err2",
    "libkeyutils1",
)
ARM64_WHEELS = ("onnxruntime", "numpy", "tokenizers")
ARM64_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64")
# ARM64 CPUs by the int8 kernel onnxruntime's MLAS takes on them: (qemu -cpu, what the
# emulated /proc/cpuinfo says: Features, CPU part).
BASE_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"
DOT_FEATURES = f"{BASE_FEATURES} atomics fphp asimdhp asimdrdm lrcpc dcpop asimddp"


@dataclass(frozen=True)
class CpuPath:
    """One way to run Python on an (emulated) CPU."""

    name: str
    kernel: str  # the int8 matrix kernel onnxruntime takes there
    qemu_cpu: str | None  # None: this machine as it is
    arm64: tuple[str, str] | None = None  # (Features, CPU part) of its /proc/cpuinfo


X86_PATHS = (
    CpuPath("host", "this machine's", None),
    CpuPath("haswell", "x86-64 AVX2, no VNNI", "Haswell"),
    CpuPath("vnni", "x86-64 AVX-VNNI or AVX-512 VNNI", "max"),
)
ARM64_PATHS = (
    CpuPath("arm64-neon", "ARM64 NEON, no dot product", "cortex-a72", (BASE_FEATURES, "0xd08")),
    CpuPath("arm64-dot", "ARM64 dot product", "neoverse-n1", (DOT_FEATURES, "0xd0c")),
    CpuPath("arm64-i8mm", "ARM64 i8mm", "max", (f"{DOT_FEATURES} i8mm", "0xd0c")),
)


@dataclass
class Row:
    """One table row: a model on a path, measured or not run (and why)."""

    path: str
    kernel: str
    model: str
    cosines: list[float]
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    note: str = ""


def _jobs(models: list[str], short: bool = False) -> list[dict[str, Any]]:
    """For each model: its files (prepared first if missing), cut and reference set (only
    the short texts, if asked)."""
    sys.path.insert(0, str(SRC))
    from memory_bank.models import local_model
    from memory_bank.settings import Settings

    references = json.loads(REFERENCES.read_text())
    jobs = []
    for name in models:
        chosen = local_model.plan(name, Settings())
        files = chosen.present() or chosen.prepare(local_model.Report())
        entry = references[name]
        if name == "all-mpnet-base-v2" and MPNET_REFERENCE.is_file():
            entry = json.loads(MPNET_REFERENCE.read_text())
        kept = [i for i, t in enumerate(entry["texts"]) if not short or len(t) <= SHORT_CHARS]
        jobs.append(
            {
                "name": name,
                "model_file": str(files.model),
                "tokenizer_file": str(files.tokenizer),
                "max_tokens": chosen.max_tokens,
                "texts": [entry["texts"][i] for i in kept],
                "vectors": [entry["vectors"][i] for i in kept],
            }
        )
    return jobs


def _vectors(stored: list[Any]) -> Any:
    """Reference vectors as a float32 matrix: lists of floats or base64 little-endian float32."""
    import base64

    import numpy as np

    return np.vstack(
        [
            np.frombuffer(base64.b64decode(v), dtype="<f4")
            if isinstance(v, str)
            else np.asarray(v, dtype=np.float32)
            for v in stored
        ]
    )


def probe(job_file: Path) -> dict[str, Any]:
    """Inside the (emulated) Python: this CPU's features and each model's cosines."""
    sys.path.insert(0, str(SRC))
    import numpy as np

    from memory_bank.models.local_model import LocalProvider

    out: dict[str, Any] = {"machine": platform.machine(), "features": _features(), "models": {}}
    for job in json.loads(job_file.read_text()):
        started, cpu = time.monotonic(), time.process_time()
        provider = LocalProvider(
            job["name"], Path(job["model_file"]), Path(job["tokenizer_file"]), job["max_tokens"]
        )
        got = []
        for n, text in enumerate(job["texts"], 1):
            got.append(provider.embed([text])[0])
            # Progress on stderr: under emulation a long text takes minutes.
            spent = time.monotonic() - started
            print(
                f"{job['name']}: text {n}/{len(job['texts'])} at {spent:.0f} s "
                f"({time.process_time() - cpu:.0f} s of CPU)",
                file=sys.stderr,
                flush=True,
            )
        found = (np.vstack(got) * _vectors(job["vectors"])).sum(axis=1)
        out["models"][job["name"]] = {
            "cosines": [round(float(c), 4) for c in found],
            "seconds": round(time.monotonic() - started, 1),
            # The emulator's CPU time: what the run costs whatever else the machine runs.
            "cpu_seconds": round(time.process_time() - cpu, 1),
        }
    return out


def _features() -> list[str]:
    """The int8-relevant features this CPU reports (x86 by cpuid, ARM64 by hwcaps)."""
    if platform.machine() == "aarch64":
        getauxval = ctypes.CDLL(None).getauxval
        getauxval.restype = ctypes.c_ulong
        hwcap, hwcap2 = getauxval(16), getauxval(26)  # AT_HWCAP, AT_HWCAP2
        bits = {"asimd": hwcap >> 1, "asimddp": hwcap >> 20, "i8mm": hwcap2 >> 13}
    else:
        leaf1, leaf7, leaf7_1 = _cpuid(1, 0), _cpuid(7, 0), _cpuid(7, 1)
        bits = {
            "avx2": leaf7[1] >> 5,
            "avx512f": leaf7[1] >> 16,
            "avx512bw": leaf7[1] >> 30,
            "avx512_vnni": leaf7[2] >> 11,
            "avx_vnni": leaf7_1[0] >> 4,
            "avx": leaf1[2] >> 28,
        }
    return sorted(name for name, bit in bits.items() if bit & 1)


# x86-64 machine code for `void cpuid(uint32 leaf, uint32 subleaf, uint32 out[4])` (System V
# arguments edi, esi, rdx): Python has no cpuid of its own, and under qemu-user only an
# instruction the emulated CPU runs tells what that CPU is (/proc/cpuinfo is the host's).
_CPUID_CODE = bytes.fromhex(
    "53"  # push rbx (callee-saved; cpuid writes it)
    "4989d0"  # mov r8, rdx
    "89f8"  # mov eax, edi
    "89f1"  # mov ecx, esi
    "0fa2"  # cpuid
    "418900"  # mov [r8], eax
    "41895804"  # mov [r8+4], ebx
    "41894808"  # mov [r8+8], ecx
    "4189500c"  # mov [r8+12], edx
    "5b"  # pop rbx
    "c3"  # ret
)


def _cpuid(leaf: int, subleaf: int) -> list[int]:
    """The four registers cpuid gives for this leaf."""
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_CPUID_CODE)
    kind = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))
    function = kind(ctypes.addressof(ctypes.c_char.from_buffer(page)))
    registers = (ctypes.c_uint32 * 4)()
    function(leaf, subleaf, registers)
    del function
    return list(registers)


def _x86_command(path: CpuPath) -> list[str]:
    """How to start this Python on an x86-64 path."""
    if path.qemu_cpu is None:
        return [sys.executable]
    # The venv's python is a symlink chain; qemu runs the file, Python still finds the venv
    # from the name it was started by.
    return ["qemu-x86_64", "-cpu", path.qemu_cpu, sys.executable]


def _arm64_command(path: CpuPath, sysroot: Path, cpuinfo: Path) -> list[str]:
    """How to start the unpacked aarch64 Python on an ARM64 path, with an ARM64 /proc/cpuinfo."""
    assert path.qemu_cpu and path.arm64
    features, part = path.arm64
    cpuinfo.write_text(
        "\n".join(
            f"processor\t: {n}\nBogoMIPS\t: 50.00\nFeatures\t: {features}\n"
            f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n"
            f"CPU part\t: {part}\nCPU revision\t: 1\n"
            for n in range(os.cpu_count() or 1)
        )
    )
    script = 'mount --bind "$1" /proc/cpuinfo && shift && exec "$@"'
    python = sysroot / "root" / "usr" / "bin" / "python3.11"
    return [
        "unshare", "-m", "sh", "-c", script, "sh", str(cpuinfo),
        "qemu-aarch64", "-cpu", path.qemu_cpu, "-L", str(sysroot / "root"), str(python),
    ]  # fmt: skip


def _run(path: CpuPath, command: list[str], job_file: Path, env: dict[str, str]) -> list[Row]:
    """Run the probe on one path: a row per model, or one row saying why it could not run."""
    started = time.monotonic()
    done = subprocess.run(
        [*command, str(Path(__file__).resolve()), "--probe", str(job_file)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        note = f"failed (exit {done.returncode}; its error is on stderr above)"
        return [Row(path.name, path.kernel, "-", [], time.monotonic() - started, note=note)]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    note = "cpu: " + " ".join(found["features"])
    return [
        Row(
            path.name,
            path.kernel,
            name,
            result["cosines"],
            result["seconds"],
            result.get("cpu_seconds", 0.0),
            note,
        )
        for name, result in found["models"].items()
    ]


def _qemu_version(program: str) -> str:
    """`qemu-x86_64 version 7.2.22 (...)` -> `7.2.22`."""
    first = subprocess.run([program, "--version"], capture_output=True, text=True).stdout
    return first.split()[2] if first.count(" ") >= 2 else "?"


def measure(
    paths: list[str], models: list[str], arm64: Path | None = None, short: bool = False
) -> list[Row]:
    """Rows for every path asked for, in order; paths that cannot run here say why."""
    job_file = Path(tempfile.mkstemp(prefix="cpu-paths-", suffix=".json")[1])
    cpuinfo = job_file.with_suffix(".cpuinfo")
    rows: list[Row] = []
    try:
        job_file.write_text(json.dumps(_jobs(models, short)))
        for path in X86_PATHS:
            if path.name not in paths:
                continue
            if path.qemu_cpu and not shutil.which("qemu-x86_64"):
                rows.append(Row(path.name, path.kernel, "-", [], note="qemu-x86_64 missing"))
                continue
            if path.name == "vnni":
                # Only worth running if the emulated CPU has one of the VNNI extensions.
                features = _probe_features(_x86_command(path))
                if not {"avx_vnni", "avx512_vnni"} & set(features):
                    version = _qemu_version("qemu-x86_64")
                    note = (
                        f"not run: qemu-x86_64 {version} TCG emulates neither AVX-VNNI nor "
                        f"AVX-512 VNNI (-cpu max gives: {' '.join(features)})"
                    )
                    native = {"avx_vnni", "avx512_vnni"} & set(_probe_features([sys.executable]))
                    if native:
                        note += f"; this host has {' '.join(sorted(native))}: see the host row"
                    rows.append(Row(path.name, path.kernel, "-", [], note=note))
                    continue
            rows += _run(path, _x86_command(path), job_file, dict(os.environ))
        for path in ARM64_PATHS:
            if path.name not in paths:
                continue
            if arm64 is None or not (arm64 / "root").is_dir():
                note = "not run: no --arm64 directory (make one with prepare-arm64)"
                rows.append(Row(path.name, path.kernel, "-", [], note=note))
                continue
            env = dict(os.environ, PYTHONPATH=str(arm64 / "site-packages"))
            rows += _run(path, _arm64_command(path, arm64, cpuinfo), job_file, env)
    finally:
        job_file.unlink(missing_ok=True)
        cpuinfo.unlink(missing_ok=True)
    return rows


def _probe_features(command: list[str]) -> list[str]:
    """The features a Python started by this command sees."""
    done = subprocess.run(
        [*command, str(Path(__file__).resolve()), "--features"],
        capture_output=True,
        text=True,
        check=True,
    )
    features: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return features


def prepare_arm64(into: Path) -> None:
    """An aarch64 Python 3.11 (Debian's packages, unpacked) and aarch64 wheels of the runtime,
    at the versions installed here, in into/root and into/site-packages."""
    debs = into / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    foreign = subprocess.run(
        ["dpkg", "--print-foreign-architectures"], capture_output=True, text=True, check=True
    )
    if "arm64" not in foreign.stdout.split():
        subprocess.run(["dpkg", "--add-architecture", "arm64"], check=True)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(
        ["apt-get", "download", "-q", *(f"{name}:arm64" for name in ARM64_DEBS)],
        cwd=debs,
        check=True,
    )
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(into / "root")], check=True)
    pinned = [f"{name}=={importlib.metadata.version(name)}" for name in ARM64_WHEELS]
    platforms = [arg for name in ARM64_PLATFORMS for arg in ("--platform", name)]
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
            "--only-binary=:all:", "--implementation", "cp", "--python-version", "3.11",
            *platforms, "--target", str(into / "site-packages"), *pinned,
        ],
        check=True,
    )  # fmt: skip


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| path | kernel | model | min cosine | mean cosine | passes | s (CPU s) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.cosines:
            low, mean = min(row.cosines), sum(row.cosines) / len(row.cosines)
            verdict = "yes" if low >= MIN_COSINE else "**no**"
            spent = f"{row.seconds:.0f} ({row.cpu_seconds:.0f})"
            cells = [f"{low:.3f}", f"{mean:.3f}", verdict, spent]
        else:
            cells = ["-", "-", "-", "-"]
        lines.append(
            f"| {row.path} | {row.kernel} | {row.model} | {' | '.join(cells)} | {row.note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit 1 when a model measured on some path fails its check."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--probe"]:
        print(json.dumps(probe(Path(args[1]))))
        return 0
    if args[:1] == ["--features"]:
        print(json.dumps(_features()))
        return 0
    if args[:1] == ["prepare-arm64"]:
        prepare_arm64(Path(args[1]).resolve())
        return 0
    everything = [p.name for p in (*X86_PATHS, *ARM64_PATHS)]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", default=None, help=f"comma-separated, of {','.join(everything)}")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated")
    parser.add_argument("--arm64", type=Path, help="a directory made by prepare-arm64")
    parser.add_argument("--json", action="store_true", help="rows as JSON, not a table")
    parser.add_argument(
        "--short",
        action="store_true",
        help=f"only the reference texts up to {SHORT_CHARS} characters (minutes less emulated)",
    )
    options = parser.parse_args(args)
    default = [p.name for p in X86_PATHS] + ([p.name for p in ARM64_PATHS] if options.arm64 else [])
    paths = options.paths.split(",") if options.paths else default
    rows = measure(paths, options.models.split(","), options.arm64, options.short)
    if options.json:
        print(json.dumps([row.__dict__ for row in rows]))
    else:
        print(table(rows))
    return 1 if any(row.cosines and min(row.cosines) < MIN_COSINE for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
