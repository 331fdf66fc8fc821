"""Peak memory of a deep MLP's forward + backward, plain and with checkpoint_sequential,
TensorPlay and PyTorch in the same run (memory, not time: the numbers are deterministic).

    python benchmarks/bench_checkpoint.py [--device cuda] [--depth 32] [--width 512]

How the peak is measured:
- TensorPlay on the CPU: tracemalloc's peak (it sees NumPy's buffers, which hold the
  tensors, and every Python object: nodes, hooks); on cuda: tp.cuda.max_memory_allocated.
- PyTorch on the CPU (it has no allocator statistics there): a dispatch mode that records
  the storage of every op's result and drops it when the storage dies; the peak of the
  live bytes. On cuda: torch.cuda.max_memory_allocated.
Both count what the run allocates, not the weights and the input made before it.
"""
from __future__ import annotations

import argparse
import os
import sys
import tracemalloc
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # this checkout's tensorplay

import tensorplay as tp  # noqa: E402
from tensorplay.utils.checkpoint import checkpoint_sequential  # noqa: E402


def mlp(lib, depth, width, device):
    """depth x (Linear(width, width), Tanh) in `lib` (tp or torch)."""
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.Tanh()]
    return lib.nn.Sequential(*layers).to(device)


def tp_peak_bytes(run, device="cpu"):
    """Bytes allocated at the peak of `run()` beyond what was live when it started."""
    if device == "cuda":
        start = tp.cuda.memory_allocated()
        tp.cuda.reset_peak_memory_stats()
        run()
        return tp.cuda.max_memory_allocated() - start
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def torch_peak_bytes(run, device="cpu", existing=()):
    """The same for PyTorch; on the CPU `existing` lists the tensors live before the run
    (weights, their .grad, the input), whose storages the run's ops touch (a transposed
    weight, the gradient accumulated in place) but do not allocate."""
    import torch
    if device == "cuda":
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        run()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - start
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from torch.multiprocessing.reductions import StorageWeakRef

    class LiveStorages(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live = {}      # data pointer -> (weak ref to the storage, bytes)
            self.peak = 0
            self.before = {t.untyped_storage().data_ptr() for t in existing}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            # Forget the dead storages first: a new one may reuse a freed address.
            self.live = {k: v for k, v in self.live.items() if not v[0].expired()}
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    if storage.data_ptr() in self.before:
                        continue
                    self.live.setdefault(storage.data_ptr(),
                                         (StorageWeakRef(storage), storage.nbytes()))
            self.peak = max(self.peak, sum(n for _, n in self.live.values()))
            return out

    with LiveStorages() as mode:
        run()
    return mode.peak


def measure(depth=16, width=256, batch=64, segments=4, device="cpu"):
    """{(library, 'plain' or 'checkpoint'): peak bytes} for one forward + backward."""
    import torch
    from torch.utils.checkpoint import checkpoint_sequential as torch_checkpoint_sequential
    tp.manual_seed(0)
    model = mlp(tp, depth, width, device)
    x = tp.randn(batch, width, device=device, requires_grad=True)
    torch.manual_seed(0)
    torch_model = mlp(torch, depth, width, device)
    xt = torch.randn(batch, width, device=device, requires_grad=True)
    runs = {
        ("tensorplay", "plain"): (tp_peak_bytes, lambda: model(x).sum().backward()),
        ("tensorplay", "checkpoint"): (tp_peak_bytes, lambda: checkpoint_sequential(
            model, segments, x, use_reentrant=False).sum().backward()),
        ("pytorch", "plain"): (torch_peak_bytes, lambda: torch_model(xt).sum().backward()),
        ("pytorch", "checkpoint"): (torch_peak_bytes, lambda: torch_checkpoint_sequential(
            torch_model, segments, xt, use_reentrant=False).sum().backward()),
    }
    peaks = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (lib, how), (peak_of, run) in runs.items():
            run()       # warm up (kernel caches, the .grad tensors): then measure
            if lib == "tensorplay":
                peaks[lib, how] = peak_of(run, device)
            else:
                params = list(torch_model.parameters())
                existing = params + [p.grad for p in params] + [xt, xt.grad]
                peaks[lib, how] = peak_of(run, device, existing)
    return peaks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--depth", type=int, default=32)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--segments", type=int, default=4)
    args = parser.parse_args()
    peaks = measure(args.depth, args.width, args.batch, args.segments, args.device)
    print(f"{args.depth} x Linear({args.width}, {args.width}) + Tanh, batch {args.batch}, "
          f"{args.segments} segments, {args.device}: peak memory of forward + backward")
    for lib in ("tensorplay", "pytorch"):
        plain, ck = peaks[(lib, "plain")], peaks[(lib, "checkpoint")]
        print(f"  {lib:<10}  plain {plain / 2**20:8.2f} MiB   checkpoint_sequential "
              f"{ck / 2**20:8.2f} MiB   ratio {ck / plain:.3f}")


if __name__ == "__main__":
    main()
