"""Models on the meta device: building a transformer encoder and running its forward for
the output shape, without memory, against PyTorch in the same run.

    python benchmarks/bench_meta.py

What it shows: on meta every op is its shape rule (tensorplay/meta/), so the cost is
dispatch and Python, not arithmetic; the same build on the CPU allocates and initialises
~19M parameters, which the meta build skips.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import torch  # noqa: E402

import tensorplay as tp  # noqa: E402

D_MODEL, HEADS, FF, LAYERS = 512, 8, 2048, 6
BATCH, SEQ = 8, 128


def encoder(lib, device):
    layer = lib.nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=FF, dropout=0.0,
                                           batch_first=True, device=device)
    return lib.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)


def main():
    torch.set_num_threads(1)
    build = [("tensorplay meta", lambda: encoder(tp, "meta")),
             ("torch meta", lambda: encoder(torch, "meta")),
             ("tensorplay cpu", lambda: encoder(tp, "cpu"))]
    report(f"build TransformerEncoder({D_MODEL}, {HEADS}, ff {FF}) x {LAYERS}",
           [(label, timeit(fn, min_time=0.5, repeats=3)) for label, fn in build])

    model, reference = encoder(tp, "meta"), encoder(torch, "meta")
    x = tp.empty(BATCH, SEQ, D_MODEL, device="meta")
    xt = torch.empty(BATCH, SEQ, D_MODEL, device="meta")
    assert tuple(model(x).shape) == tuple(reference(xt).shape)
    report(f"forward on meta, input [{BATCH}, {SEQ}, {D_MODEL}] (shapes only)",
           [("tensorplay meta", timeit(lambda: model(x))),
            ("torch meta", timeit(lambda: reference(xt)))])


if __name__ == "__main__":
    main()
