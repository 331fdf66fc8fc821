"""Training steps end to end, against PyTorch in the same run.

    python benchmarks/bench_training.py          the ratios below, and their parts
    python benchmarks/bench_training.py --full   also the default `tensorplay train` run
    python benchmarks/bench_training.py --case=transformer --cpu-time
                                                 only the layer cases whose title holds
                                                 one of the --case= words (case-insensitive)

Targets: one epoch of the digits CNN of `tensorplay train` (1,437 images, batch 32, Adam)
within 1.25x PyTorch, its backward within 1.5x, its step within 2.5x of its GEMM floor
(the products of its conv and linear layers timed alone in NumPy); an MLP 784-512-512-10
step on random data, batch 128 (forward, backward, Adam step) within 1.5x. The training
layers one at a time (the backward kernels of batch_norm, ReLU, max_pool, cross-entropy
within 1.5x; GRU and LSTM forward + backward within 1.5x; a TransformerEncoder within
1.3x; a ResNet basic block within 1.4x; Adam fused=True over 1M parameters within 1.5x
of PyTorch's fused step): `--layers`, or run by default after the CNN. The CNN's
convolutions alone, per batch size (1, 8, 32, 64; target 1.3x): bench_nn_spatial.py.

Timing: every case times TensorPlay and PyTorch in alternation, each the fastest of 15
rounds (common.paired; the epochs, and each phase of them, the fastest of 5), since the
ratio of two timings one after the other moved by 10-15% with the load in between
(`--cpu-time`: by CPU time, steadier still on a busy machine).

Threads: both libraries get BENCH_THREADS (default 1): PyTorch through set_num_threads,
NumPy's OpenBLAS through OPENBLAS_NUM_THREADS, set before NumPy loads (as in
bench_reduction.py). On a busy 2-core machine OpenBLAS's default two spinning threads
make a 128x784 @ 784x512 product 5-30x slower than one thread does.
"""
from __future__ import annotations

import io
import os
import sys
import time

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, paired, report  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay.train import data as train_data  # noqa: E402
from tensorplay.train.models import DigitsCNN  # noqa: E402
from tensorplay.utils.data import DataLoader, TensorDataset  # noqa: E402


def torch_cnn(torch, width=16):
    """DigitsCNN written in torch.nn, layer for layer."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.25), nn.Linear(2 * width * 16, 10))


def epoch_fn(lib, model, loader):
    """One training epoch as a closure: lib is tensorplay or torch (same API)."""
    optimizer = lib.optim.Adam(model.parameters(), lr=2e-3)

    def run():
        model.train()
        for x, y in loader:
            loss = lib.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return run


def phases_fn(lib, model, loader):
    """One epoch timed by phase: (forward + loss, zero_grad + backward, optimizer step)."""
    optimizer = lib.optim.Adam(model.parameters(), lr=2e-3)

    def run():
        model.train()
        spent = [0.0, 0.0, 0.0]
        for x, y in loader:
            start = time.perf_counter()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            forward = time.perf_counter()
            optimizer.zero_grad()
            loss.backward()
            backward = time.perf_counter()
            optimizer.step()
            end = time.perf_counter()
            spent[0] += forward - start
            spent[1] += backward - forward
            spent[2] += end - backward
        return spent
    return run


def best_phases(run_a, run_b, repeats=5):
    """Each phase's smallest epoch total over `repeats` epochs of each of two runs (after
    one warm-up each), the two run in alternation so that both see the same load."""
    run_a(), run_b()
    totals = [(run_a(), run_b()) for _ in range(repeats)]
    return ([min(t[0][i] for t in totals) for i in range(3)],
            [min(t[1][i] for t in totals) for i in range(3)])


def bench_cnn_epoch(torch):
    split = train_data.digits(seed=0)
    images, labels = split.train.tensors
    tp.manual_seed(0)
    tp_loader = DataLoader(split.train, batch_size=32, shuffle=True,
                           generator=tp.Generator().manual_seed(0))
    tp_epoch = epoch_fn(tp, DigitsCNN(), tp_loader)

    torch.manual_seed(0)
    torch_set = torch.utils.data.TensorDataset(torch.tensor(images.numpy()),
                                               torch.tensor(labels.numpy()))
    torch_loader = torch.utils.data.DataLoader(torch_set, batch_size=32, shuffle=True)
    torch_model = torch_cnn(torch)
    torch_epoch = epoch_fn(torch, torch_model, torch_loader)
    _report_pair(f"digits CNN: one epoch ({len(split.train)} images, batch 32, Adam)",
                 tp_epoch, torch_epoch, "within 1.25x torch", min_time=0, rounds=5)
    tp_phases, torch_phases = best_phases(phases_fn(tp, DigitsCNN(), tp_loader),
                                          phases_fn(torch, torch_model, torch_loader))
    for name, ours, theirs in zip(("forward + loss", "zero_grad + backward",
                                   "optimizer step"), tp_phases, torch_phases):
        report(f"digits CNN epoch, {name} only", [("tp", ours), ("torch", theirs)],
               ["within 1.5x torch"] if "backward" in name else None)


def _conv_floor_products(batch, width=16, size=8, classes=10):
    """The matrix products of one DigitsCNN training step, as NumPy closures on contiguous
    operands of the exact sizes (no padding positions, no copies): each conv's forward
    W @ cols and weight gradient cols @ G^T, the second conv's input gradient W^T @ G (the
    first layer's input needs none), the linear layer's three products."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    positions = batch * size * size
    products = []
    for c_in, c_out in ((1, width), (width, 2 * width)):
        w = rng.standard_normal((c_out, c_in * 9)).astype(f32)
        cols = rng.standard_normal((c_in * 9, positions)).astype(f32)
        g = rng.standard_normal((c_out, positions)).astype(f32)
        products += [lambda w=w, cols=cols: w @ cols, lambda cols=cols, g=g: cols @ g.T]
        if c_in > 1:
            products.append(lambda w=w, g=g: w.T @ g)
    features = 2 * width * (size // 2) ** 2
    x = rng.standard_normal((batch, features)).astype(f32)
    w = rng.standard_normal((classes, features)).astype(f32)
    g = rng.standard_normal((batch, classes)).astype(f32)
    products += [lambda: x @ w.T, lambda: g.T @ x, lambda: g @ w]
    return products


def bench_cnn_step_floor(torch):
    """One DigitsCNN step (batch 32: forward, loss, backward, Adam) against its GEMM floor."""
    batch = 32
    products = _conv_floor_products(batch)
    rng = np.random.default_rng(0)
    images = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 10, batch)

    def step_fn(lib, model):
        optimizer = lib.optim.Adam(model.parameters(), lr=2e-3)
        x, y = lib.tensor(images), lib.tensor(labels)

        def step():
            loss = lib.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return step
    tp.manual_seed(0)
    torch.manual_seed(0)
    # the floor is timed in the same alternation as the two steps, so that all three see
    # the same load (timed apart, the floor moved by 10% between runs)
    ours, theirs, floor = paired(step_fn(tp, DigitsCNN()), step_fn(torch, torch_cnn(torch)),
                                 lambda: [p() for p in products])
    print(f"\ndigits CNN step, batch {batch}, against its GEMM floor ({len(products)} "
          f"products in NumPy, timed with the steps: {fmt_time(floor).strip()})")
    print(f"  tp    {fmt_time(ours)}  = {ours / floor:5.2f}x the floor  (tp/torch = "
          f"{ours / theirs:5.2f}x)")
    print(f"  torch {fmt_time(theirs)}  = {theirs / floor:5.2f}x the floor")
    print("  target: tp within 2.5x the floor")


def _grad_fn(lib, fn, shape, rng, **kwargs):
    """A closure timing the backward of y = fn(x) alone: one gradient through the graph
    recorded once (retain_graph), as both libraries' autograd.grad runs it."""
    a = rng.standard_normal(shape).astype(np.float32)
    x = lib.tensor(a, requires_grad=True)
    y = fn(lib, x)
    g = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)).astype(np.float32))
    return lambda: lib.autograd.grad(y, x, g, retain_graph=True)


def bench_backward_kernels(torch):
    """The backward of each layer of the CNN on its own (the digits CNN's sizes, batch 32)."""
    labels = np.random.default_rng(2).integers(0, 10, 32)
    norm = {tp: tp.nn.BatchNorm2d(32), torch: torch.nn.BatchNorm2d(32)}
    cases = (
        ("batch_norm backward, 32x32x8x8", (32, 32, 8, 8), lambda L, x: norm[L](x)),
        ("ReLU backward, 32x32x8x8", (32, 32, 8, 8), lambda L, x: L.relu(x)),
        ("max_pool2d(2) backward, 32x32x8x8", (32, 32, 8, 8),
         lambda L, x: L.nn.functional.max_pool2d(x, 2)),
        ("cross-entropy backward, 32x10", (32, 10),
         lambda L, x: L.nn.functional.cross_entropy(x, L.tensor(labels))),
    )
    for title, shape, fn in cases:
        _report_pair(title, _grad_fn(tp, fn, shape, np.random.default_rng(0)),
                     _grad_fn(torch, fn, shape, np.random.default_rng(0)),
                     "within 1.5x torch")
    data = np.random.default_rng(3).standard_normal((32, 512)).astype(np.float32)
    _report_pair("dropout(0.25) forward, 32x512",
                 lambda: tp.nn.functional.dropout(tp.tensor(data), 0.25),
                 lambda: torch.nn.functional.dropout(torch.tensor(data), 0.25))


def _report_pair(title, ours, theirs, target=None, **timing):
    """report() of one case whose TensorPlay and PyTorch closures are timed in
    alternation (common.paired, with its `timing` options), so that both see the same
    load."""
    mine, torch_time = paired(ours, theirs, **timing)
    report(title, [("tp", mine), ("torch", torch_time)], [target] if target else None)


def _step_pair(torch, make, data_shape, loss=lambda out: out.sum()):
    """(tp, torch) closures of forward + backward of the same module (torch's weights
    loaded into TensorPlay's) on the same input."""
    torch.manual_seed(0)
    theirs = make(torch.nn)
    ours = make(tp.nn)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    data = np.random.default_rng(0).standard_normal(data_shape).astype(np.float32)
    x, xt = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)

    def first(out):
        return out[0] if isinstance(out, tuple) else out
    return (lambda: loss(first(ours(x))).backward(),
            lambda: loss(first(theirs(xt))).backward())


class _BasicBlock:
    """ResNet's basic block (conv-BN-ReLU-conv-BN, plus the input, ReLU) for either
    library: `make(nn)` builds it from that library's layers."""

    @staticmethod
    def make(nn, channels=32):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(channels)
                self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(channels)
                self.relu = nn.ReLU()

            def forward(self, x):
                y = self.relu(self.bn1(self.conv1(x)))
                return self.relu(self.bn2(self.conv2(y)) + x)
        return Block()


# --case=word (repeatable): run only the layer cases whose title contains a word
CASES = [a.split("=", 1)[1].lower() for a in sys.argv[1:] if a.startswith("--case=")]


def _wanted(title):
    return not CASES or any(word in title.lower() for word in CASES)


def bench_layers(torch):
    """GRU, LSTM, a TransformerEncoder and a ResNet block, forward + backward; Adam fused."""
    seq, batch, inputs, hidden = 35, 20, 32, 64
    for name in ("GRU", "LSTM"):
        if not _wanted(name):
            continue
        ours, theirs = _step_pair(torch, lambda nn: getattr(nn, name)(inputs, hidden),
                                  (seq, batch, inputs))
        _report_pair(f"{name}(input {inputs}, hidden {hidden}), sequence {seq}, batch "
                     f"{batch}: forward + backward", ours, theirs, "within 1.5x torch")

    def encoder(nn):
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=256, dropout=0.0,
                                           batch_first=True)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    if _wanted("TransformerEncoder"):
        ours, theirs = _step_pair(torch, encoder, (16, 32, 64))
        _report_pair("TransformerEncoder (2 layers, d_model 64, 4 heads, ff 256), 16x32: "
                     "forward + backward", ours, theirs, "within 1.3x torch")
    if _wanted("ResNet basic block"):
        ours, theirs = _step_pair(torch, _BasicBlock.make, (16, 32, 16, 16))
        _report_pair("ResNet basic block (32 channels, 16x16, batch 16): forward + "
                     "backward", ours, theirs, "within 1.4x torch")
        tp.backends.cpu.allow_winograd = True      # its 3x3 convolutions by Winograd
        try:
            _report_pair("ResNet basic block, tp.backends.cpu.allow_winograd = True", ours,
                         theirs)
        finally:
            tp.backends.cpu.allow_winograd = False

    def adam_step(lib):
        rng = np.random.default_rng(0)
        params = [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
                  for s in ((1000, 1000), (1000,), (48, 1000))]    # 1,049,000 values
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        return lib.optim.Adam(params, lr=1e-3, fused=True).step
    if not _wanted("Adam"):
        return
    _report_pair("Adam(fused=True) step, 1,049,000 parameters", adam_step(tp),
                 adam_step(torch), "within 1.5x torch's fused step")


def bench_mlp_step(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)

    def mlp(nn):
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))

    def step_fns(lib, model, x, y):
        """(the whole step, forward + backward only, the Adam step only)."""
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)

        def gradients():
            loss = lib.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()

        def step():
            gradients()
            optimizer.step()
        return step, gradients, optimizer.step
    tp.manual_seed(0)
    torch.manual_seed(0)
    tp_fns = step_fns(tp, mlp(tp.nn), tp.tensor(x), tp.tensor(y))
    torch_fns = step_fns(torch, mlp(torch.nn), torch.tensor(x), torch.tensor(y))
    titles = ("forward + backward + Adam step", "forward + backward only",
              "Adam step only (669,706 parameters)")
    for title, tp_fn, torch_fn in zip(titles, tp_fns, torch_fns):
        _report_pair(f"MLP 784-512-512-10, batch 128: {title}", tp_fn, torch_fn,
                     "within 1.5x torch" if title == titles[0] else None)


def bench_full_run():
    """The default `tensorplay train` (the CNN, 10 epochs), as a user runs it."""
    from tensorplay.train.loop import run_training
    from tensorplay.train.options import MODEL_DEFAULTS, DEFAULT_LR
    options = dict(MODEL_DEFAULTS["cnn"], model="cnn", lr=DEFAULT_LR["adam"], seed=0,
                   context=32, limit=None, device="cpu", explain=False, profile=False,
                   threads=THREADS,
                   out=os.path.join("runs", "bench-cnn"))
    start = time.perf_counter()
    result = run_training(options, out=io.StringIO(), progress=False)
    seconds = time.perf_counter() - start
    print(f"\ndefault `tensorplay train` (cnn, 10 epochs): test accuracy "
          f"{result['test_acc']:.2%}, wall time {fmt_time(seconds)}")
    print("  target: >= 97% in under 2 minutes")


def main():
    import torch
    torch.set_num_threads(THREADS)
    if "--layers" not in sys.argv[1:] and not CASES:
        bench_cnn_epoch(torch)
        bench_cnn_step_floor(torch)
        bench_mlp_step(torch)
    if not CASES:
        bench_backward_kernels(torch)
    bench_layers(torch)
    if "--full" in sys.argv[1:]:
        bench_full_run()


if __name__ == "__main__":
    main()
