"""Inference of a pre-norm transformer block (attention, layernorm, tanh-GELU MLP), eager vs @jitgraph.compile."""

from __future__ import annotations

import numpy as np
from _harness import FirstCall, agreed, assert_same, median_time, parse_args, print_table

import jitgraph


def layernorm(x, w, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def block(x, p, heads):
    t, d = x.shape
    hd = d // heads
    h = layernorm(x, p["ln1_w"], p["ln1_b"])
    q = (h @ p["wq"]).reshape(t, heads, hd).transpose(1, 0, 2)
    k = (h @ p["wk"]).reshape(t, heads, hd).transpose(1, 0, 2)
    v = (h @ p["wv"]).reshape(t, heads, hd).transpose(1, 0, 2)
    att = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(hd) + p["mask"])
    y = (att @ v).transpose(1, 0, 2).reshape(t, d)
    x = x + y @ p["wo"]
    h = layernorm(x, p["ln2_w"], p["ln2_b"])
    return x + gelu(h @ p["w1"] + p["b1"]) @ p["w2"]


def init(t: int, d: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.normal(size=shape) / np.sqrt(shape[0])).astype(np.float32)

    mask = np.triu(np.full((t, t), -np.inf, np.float32), k=1)
    return {"ln1_w": np.ones(d, np.float32), "ln1_b": np.zeros(d, np.float32), "wq": w(d, d), "wk": w(d, d),
            "wv": w(d, d), "wo": w(d, d), "ln2_w": np.ones(d, np.float32), "ln2_b": np.zeros(d, np.float32),
            "w1": w(d, 4 * d), "b1": np.zeros(4 * d, np.float32), "w2": w(4 * d, d), "mask": mask}


def example_block() -> tuple:
    """Arguments for ``python -m jitgraph explain examples/transformer_block.py:block``."""
    x = np.random.default_rng(1).normal(size=(8, 16)).astype(np.float32)
    return x, init(8, 16), 2


def main() -> None:
    args = parse_args(__doc__)
    t, d, heads = (16, 32, 4) if args.small else (256, 256, 4)
    p = init(t, d)
    x = np.random.default_rng(1).normal(size=(t, d)).astype(np.float32)
    compiled = jitgraph.compile(block, backend=args.backend)
    first = FirstCall(compiled)
    assert_same(block(x, p, heads), first(x, p, heads), rtol=1e-3, atol=1e-4, what="block output")
    x2 = np.random.default_rng(2).normal(size=(t, d)).astype(np.float32)
    assert_same(block(x2, p, heads), compiled(x2, p, heads), rtol=1e-3, atol=1e-4, what="block output, new input")
    agreed("block output for two inputs")
    print_table("transformer_block", [{"name": f"block T={t} D={d} H={heads}",
                                       "eager": median_time(lambda: block(x, p, heads)),
                                       "compiled": median_time(lambda: compiled(x, p, heads)),
                                       "compile": first.seconds}], compiled, first)


if __name__ == "__main__":
    main()
