"""TensorPlay's Triton kernels against PyTorch CUDA, measured in the same run on the
same GPU, through the public API (`a @ b`, `F.conv2d`, ...: dispatch included).

    python benchmarks/gpu/bench_gpu.py              # a real GPU: the full sizes
    python benchmarks/gpu/bench_gpu.py --markdown --results benchmarks/RESULTS.md
                                                    # also write the table there
    TENSORPLAY_TRITON_INTERPRET=1 python benchmarks/gpu/bench_gpu.py --smoke
                                                    # tiny sizes, any machine: runs every
                                                    # case once, to check the script

The cases, by group: matmul; pointwise; softmax, layer_norm, cross_entropy; fft;
attention (fp16/bf16, causal, sequences of 1k to 16k); convolution (ResNet-50 layers,
NCHW and NHWC, half and float32); sort / topk (vocabulary-sized rows); reductions (row,
column, var); small sizes (launch-bound: the time of a call, not its bandwidth); and the
backward passes (softmax, layer_norm, cross_entropy, conv, attention: forward and
backward timed together, against PyTorch's forward and backward).

Each case prints TensorPlay's and PyTorch's rate (TFLOP/s for the FLOP-bound cases, GB/s
of ideal traffic for the memory-bound ones, microseconds per call for the launch-bound
ones) and the ratio PyTorch time / TensorPlay time (1.00: as fast; above: faster), with
the issue's target where it has one. An op missing from this build, or a call that fails,
is skipped with the reason.

Timing: each measurement enqueues a batch of calls between two CUDA events and divides,
so the CPU-side cost of a call (Python dispatch, the Triton launch) is hidden when the
GPU work per call is larger, as it is in a real training step (and shows where it is not:
the small-size cases). The first call of a case compiles and autotunes, and is not timed.

Time budget: device time is short (run.sh's whole run is meant to fit 8 minutes), so each
case times as many calls as fit its budget (`budget`, seconds; at least one batch of one)
and the run starts no case once `--budget` seconds have passed (the rest are skipped,
saying so); the cases are ordered most important first.
"""
from __future__ import annotations

import argparse
import datetime
import pathlib
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import tensorplay as tp

RESULTS_HEADER = """# GPU benchmark results

TensorPlay's Triton kernels against PyTorch CUDA on the same GPU, written by
`benchmarks/gpu/bench_gpu.py --results` (`benchmarks/gpu/run.sh` runs it), newest run first.
Ratio: PyTorch's time / TensorPlay's time (1.00 is as fast, above is faster). Rates: TFLOP/s
for matmul, attention and convolution, GB/s of ideal memory traffic for the memory-bound
kernels, microseconds per call for the launch-bound small sizes (there the ratio is still
PyTorch's time / TensorPlay's).
"""


@dataclass
class Case:
    name: str
    build: Callable    # (smoke) -> (tp_fn, torch_fn, work) ; work = flops, bytes or calls
    unit: str          # "TFLOP/s", "GB/s" or "us/call"
    target: Optional[float] = None
    needs: tuple = ()  # tp functions the case calls; skipped when one is missing
    group: str = ""
    budget: float = 8.0    # seconds of timed calls (each side)


def _torch():
    import torch
    return torch


def _function(name):
    """tp.<name>, or tp.nn.functional.<name>; None when this build has neither."""
    if hasattr(tp, name):
        return getattr(tp, name)
    nn = getattr(tp, "nn", None)
    return getattr(getattr(nn, "functional", None), name, None)


def _pair(shape, dtype, smoke, scale=1.0, channels_last=False):
    """A TensorPlay cuda tensor with random values and a torch view of the same memory
    (the same strides: channels_last when asked)."""
    x = tp.empty(*shape, dtype=dtype, device="cuda")
    if channels_last:
        x = x.contiguous(memory_format=tp.channels_last)
    tx = tp.cuda.as_torch(x)
    tx.copy_(_torch().randn(*shape, dtype=tx.dtype, device=tx.device) * scale)
    return x, tx


def _targets(classes, rows, tx):
    """Class indices for cross-entropy, in torch and in TensorPlay."""
    torch = _torch()
    target = torch.randint(0, classes, (rows,), device=tx.device)
    return target, (tp.from_dlpack(target) if tx.is_cuda else
                    tp.tensor(target.numpy(), device="cuda"))


def _backward(tp_forward, torch_forward, tp_leaves, torch_leaves, tp_grad, torch_grad):
    """(tp_fn, torch_fn) that each run the forward and its backward with the given output
    gradient; the leaves' .grad is cleared first (no accumulation kernel timed)."""
    for t in tp_leaves:
        t.requires_grad_(True)
    torch_leaves = [t.detach().requires_grad_(True) for t in torch_leaves]

    def run_tp():
        for t in tp_leaves:
            t.grad = None
        tp_forward(*tp_leaves).backward(tp_grad)

    def run_torch():
        for t in torch_leaves:
            t.grad = None
        torch_forward(*torch_leaves).backward(torch_grad)
    return run_tp, run_torch


# ---- the cases: matmul, pointwise, the row kernels, fft ------------------------------------
def matmul_case(dtype):
    def build(smoke):
        n = 64 if smoke else 4096
        a, ta = _pair((n, n), dtype, smoke)
        b, tb = _pair((n, n), dtype, smoke)
        return (lambda: a @ b), (lambda: ta @ tb), 2 * n ** 3
    return Case(f"matmul {dtype.name} 4096^3", build, "TFLOP/s", 0.70, group="matmul")


def add_case():
    def build(smoke):
        n = 4096 if smoke else 256 * 1024 * 1024
        x, tx = _pair((n,), tp.float32, smoke)
        y, ty = _pair((n,), tp.float32, smoke)
        return (lambda: x + y), (lambda: tx + ty), 3 * 4 * n
    return Case("add float32 256M elements", build, "GB/s", 0.80, group="pointwise")


def softmax_case():
    def build(smoke):
        n = 64 if smoke else 8192
        x, tx = _pair((n, n), tp.float32, smoke)
        torch = _torch()
        softmax = _function("softmax")
        return (lambda: softmax(x, -1)), (lambda: torch.softmax(tx, -1)), 2 * 4 * n * n
    return Case("softmax float32 8192x8192", build, "GB/s", 0.80, needs=("softmax",),
                group="rows")


def layer_norm_case():
    def build(smoke):
        rows, cols = (64, 64) if smoke else (8192, 8192)
        x, tx = _pair((rows, cols), tp.float32, smoke)
        w, tw = _pair((cols,), tp.float32, smoke)
        b, tb = _pair((cols,), tp.float32, smoke)
        torch = _torch()
        layer_norm = _function("layer_norm")
        return (lambda: layer_norm(x, [cols], w, b, 1e-5)), \
            (lambda: torch.nn.functional.layer_norm(tx, [cols], tw, tb, 1e-5)), \
            2 * 4 * rows * cols
    return Case("layer_norm float32 8192x8192", build, "GB/s", 0.80, needs=("layer_norm",),
                group="rows")


def cross_entropy_case():
    def build(smoke):
        rows, classes = (64, 128) if smoke else (8192, 32768)
        x, tx = _pair((rows, classes), tp.float32, smoke)
        target, t_target = _targets(classes, rows, tx)
        cross_entropy = _function("cross_entropy")
        return (lambda: cross_entropy(x, t_target)), \
            (lambda: _torch().nn.functional.cross_entropy(tx, target)), 4 * rows * classes
    return Case("cross_entropy float32 8192x32768", build, "GB/s", 0.80,
                needs=("cross_entropy",), group="rows")


def fft_case():
    """The radix-2 Stockham FFT (one launch per stage: log2(n) passes over the data)
    against cuFFT; GB/s counts the ideal traffic, one read and one write of the data."""
    def build(smoke):
        rows, n = (4, 64) if smoke else (64, 1 << 16)
        x, tx = _pair((rows, n), tp.complex64, smoke)
        torch = _torch()
        return (lambda: tp.fft.fft(x)), (lambda: torch.fft.fft(tx)), 2 * 8 * rows * n
    return Case("fft complex64 64 x 2^16", build, "GB/s", None, group="fft")


# ---- attention -----------------------------------------------------------------------------
def _attention_flops(batch, heads, seq, dim, causal):
    """Q K^T and P V: 4 * B * H * L * S * D multiply-adds counted as flops, halved when
    causal (FlashAttention's convention)."""
    return 4 * batch * heads * seq * seq * dim // (2 if causal else 1)


def attention_case(dtype, seq, causal, batch_heads):
    batch, heads = batch_heads

    def build(smoke):
        b, h, n, d = (1, 2, 16, 16) if smoke else (batch, heads, seq, 64)
        q, tq = _pair((b, h, n, d), dtype, smoke)
        k, tk = _pair((b, h, n, d), dtype, smoke)
        v, tv = _pair((b, h, n, d), dtype, smoke)
        sdpa = _function("scaled_dot_product_attention")
        torch_sdpa = _torch().nn.functional.scaled_dot_product_attention
        return (lambda: sdpa(q, k, v, is_causal=causal)), \
            (lambda: torch_sdpa(tq, tk, tv, is_causal=causal)), \
            _attention_flops(b, h, n, d, causal)
    kind = "causal" if causal else "full"
    return Case(f"attention {dtype.name} {kind} {batch}x{heads}x{seq}x64", build, "TFLOP/s",
                needs=("scaled_dot_product_attention",), group="attention")


def attention_backward_case(dtype, seq):
    def build(smoke):
        b, h, n, d = (1, 2, 16, 16) if smoke else (1, 16, seq, 64)
        pairs = [_pair((b, h, n, d), dtype, smoke) for _ in range(4)]
        (q, tq), (k, tk), (v, tv), (g, tg) = pairs
        sdpa = _function("scaled_dot_product_attention")
        torch_sdpa = _torch().nn.functional.scaled_dot_product_attention
        run_tp, run_torch = _backward(
            lambda *a: sdpa(*a, is_causal=True), lambda *a: torch_sdpa(*a, is_causal=True),
            [q, k, v], [tq, tk, tv], g, tg)
        # forward + backward: the backward recomputes the scores and adds three products
        return run_tp, run_torch, _attention_flops(b, h, n, d, True) * 7 // 2
    return Case(f"attention backward {dtype.name} causal 1x16x{seq}x64", build, "TFLOP/s",
                needs=("scaled_dot_product_attention",), group="backward")


# ---- convolution ---------------------------------------------------------------------------
# ResNet-50 layers at batch 32: (name, in channels, out channels, kernel, stride, size).
RESNET_LAYERS = {
    "res2 3x3": (64, 64, 3, 1, 56),
    "res2 1x1": (256, 64, 1, 1, 56),
    "res4 3x3": (256, 256, 3, 1, 14),
}


def _conv_operands(layer, dtype, smoke, channels_last):
    cin, cout, k, stride, size = RESNET_LAYERS[layer]
    n = 32
    if smoke:
        n, cin, cout, size = 1, 4, 4, 6
    x, tx = _pair((n, cin, size, size), dtype, smoke, channels_last=channels_last)
    w, tw = _pair((cout, cin, k, k), dtype, smoke, scale=0.1, channels_last=channels_last)
    out = (size + 2 * (k // 2) - k) // stride + 1
    flops = 2 * n * cout * out * out * cin * k * k
    return (x, tx, w, tw), dict(stride=stride, padding=k // 2), flops, (n, cout, out)


def conv_case(layer, dtype, channels_last):
    def build(smoke):
        (x, tx, w, tw), kw, flops, _ = _conv_operands(layer, dtype, smoke, channels_last)
        conv2d = _function("conv2d")
        torch_conv = _torch().nn.functional.conv2d
        return (lambda: conv2d(x, w, **kw)), (lambda: torch_conv(tx, tw, **kw)), flops
    layout = "NHWC" if channels_last else "NCHW"
    return Case(f"conv2d {layer} {dtype.name} {layout}", build, "TFLOP/s", needs=("conv2d",),
                group="conv", budget=5.0)


def conv_backward_case(layer, dtype, channels_last):
    def build(smoke):
        (x, tx, w, tw), kw, flops, (n, cout, out) = _conv_operands(layer, dtype, smoke,
                                                                   channels_last)
        g, tg = _pair((n, cout, out, out), dtype, smoke, channels_last=channels_last)
        conv2d = _function("conv2d")
        torch_conv = _torch().nn.functional.conv2d
        run_tp, run_torch = _backward(lambda a, b: conv2d(a, b, **kw),
                                      lambda a, b: torch_conv(a, b, **kw),
                                      [x, w], [tx, tw], g, tg)
        return run_tp, run_torch, 3 * flops       # forward, grad input, grad weight
    layout = "NHWC" if channels_last else "NCHW"
    return Case(f"conv2d backward {layer} {dtype.name} {layout}", build, "TFLOP/s",
                needs=("conv2d",), group="backward", budget=5.0)


# ---- sort / topk, reductions ---------------------------------------------------------------
def topk_case(dtype):
    def build(smoke):
        rows, vocab, k = (4, 300, 5) if smoke else (32, 50257, 50)
        x, tx = _pair((rows, vocab), dtype, smoke)
        return (lambda: tp.topk(x, k, -1)), (lambda: tx.topk(k, -1)), \
            rows * vocab * x.element_size()
    return Case(f"topk {dtype.name} 32x50257 k=50", build, "GB/s", needs=("topk",),
                group="sort")


def sort_case():
    def build(smoke):
        n = 1000 if smoke else 1 << 20
        x, tx = _pair((n,), tp.float32, smoke)
        # read once, write values and int64 indices
        return (lambda: tp.sort(x)), (lambda: tx.sort()), n * (4 + 4 + 8)
    return Case("sort float32 1M", build, "GB/s", needs=("sort",), group="sort")


def reduction_case(kind):
    def build(smoke):
        rows, cols = (64, 96) if smoke else (8192, 8192)
        x, tx = _pair((rows, cols), tp.float32, smoke)
        calls = {"row sum": (lambda: x.sum(-1), lambda: tx.sum(-1)),
                 "column sum": (lambda: x.sum(0), lambda: tx.sum(0)),
                 "row var": (lambda: x.var(-1), lambda: tx.var(-1))}
        return (*calls[kind], 4 * rows * cols)
    return Case(f"{kind} float32 8192x8192", build, "GB/s", 0.80, group="reduction")


# ---- small sizes: launch-bound ---------------------------------------------------------------
def small_case(name, make):
    """A call so small that the GPU work is a few microseconds: what is measured is the
    time per call of dispatch + launch (enqueued back to back)."""
    def build(smoke):
        tp_fn, torch_fn = make()
        return tp_fn, torch_fn, 1
    return Case(f"small {name}", build, "us/call", group="small", budget=3.0)


def _small_add():
    x, tx = _pair((1024,), tp.float32, True)
    return (lambda: x + x), (lambda: tx + tx)


def _small_softmax():
    x, tx = _pair((32, 128), tp.float32, True)
    softmax = _function("softmax")
    return (lambda: softmax(x, -1)), (lambda: _torch().softmax(tx, -1))


def _small_matmul():
    a, ta = _pair((64, 64), tp.float16, True)
    return (lambda: a @ a), (lambda: ta @ ta)


def _small_layer_norm():
    x, tx = _pair((32, 128), tp.float32, True)
    layer_norm = _function("layer_norm")
    return (lambda: layer_norm(x, [128])), \
        (lambda: _torch().nn.functional.layer_norm(tx, [128]))


# ---- backward passes of the row kernels --------------------------------------------------
def softmax_backward_case():
    def build(smoke):
        n = 64 if smoke else 8192
        (x, tx), (g, tg) = _pair((n, n), tp.float32, smoke), _pair((n, n), tp.float32, smoke)
        softmax = _function("softmax")
        run_tp, run_torch = _backward(lambda a: softmax(a, -1), lambda a: a.softmax(-1),
                                      [x], [tx], g, tg)
        return run_tp, run_torch, 5 * 4 * n * n       # read x, write y; read g, y, write dx
    return Case("softmax backward float32 8192x8192", build, "GB/s", needs=("softmax",),
                group="backward")


def layer_norm_backward_case():
    def build(smoke):
        rows, cols = (64, 64) if smoke else (8192, 8192)
        (x, tx), (g, tg) = [_pair((rows, cols), tp.float32, smoke) for _ in range(2)]
        (w, tw), (b, tb) = [_pair((cols,), tp.float32, smoke) for _ in range(2)]
        layer_norm = _function("layer_norm")
        torch_ln = _torch().nn.functional.layer_norm
        run_tp, run_torch = _backward(lambda a, c, d: layer_norm(a, [cols], c, d),
                                      lambda a, c, d: torch_ln(a, [cols], c, d),
                                      [x, w, b], [tx, tw, tb], g, tg)
        return run_tp, run_torch, 5 * 4 * rows * cols
    return Case("layer_norm backward float32 8192x8192", build, "GB/s",
                needs=("layer_norm",), group="backward")


def cross_entropy_backward_case():
    def build(smoke):
        rows, classes = (64, 128) if smoke else (8192, 32768)
        x, tx = _pair((rows, classes), tp.float32, smoke)
        target, t_target = _targets(classes, rows, tx)
        cross_entropy = _function("cross_entropy")
        torch_ce = _torch().nn.functional.cross_entropy
        one, t_one = tp.ones((), device="cuda"), _torch().ones((), device=tx.device)
        run_tp, run_torch = _backward(lambda a: cross_entropy(a, t_target),
                                      lambda a: torch_ce(a, target), [x], [tx], one, t_one)
        return run_tp, run_torch, 3 * 4 * rows * classes   # read x twice, write dx
    return Case("cross_entropy backward float32 8192x32768", build, "GB/s",
                needs=("cross_entropy",), group="backward")


CASES = [
    matmul_case(tp.float16), matmul_case(tp.bfloat16), add_case(), softmax_case(),
    layer_norm_case(), cross_entropy_case(),
    attention_case(tp.float16, 1024, True, (8, 16)),
    attention_case(tp.float16, 4096, True, (2, 16)),
    attention_case(tp.float16, 16384, True, (1, 8)),
    attention_case(tp.bfloat16, 4096, True, (2, 16)),
    attention_case(tp.float16, 4096, False, (2, 16)),
    conv_case("res2 3x3", tp.float16, True), conv_case("res2 3x3", tp.float16, False),
    conv_case("res2 3x3", tp.float32, True), conv_case("res2 3x3", tp.float32, False),
    conv_case("res2 1x1", tp.float16, True), conv_case("res2 1x1", tp.float32, False),
    conv_case("res4 3x3", tp.bfloat16, True), conv_case("res4 3x3", tp.float32, False),
    topk_case(tp.float32), topk_case(tp.float16), sort_case(),
    reduction_case("row sum"), reduction_case("column sum"), reduction_case("row var"),
    small_case("add 1024", _small_add), small_case("softmax 32x128", _small_softmax),
    small_case("matmul float16 64^3", _small_matmul),
    small_case("layer_norm 32x128", _small_layer_norm),
    softmax_backward_case(), layer_norm_backward_case(), cross_entropy_backward_case(),
    conv_backward_case("res2 3x3", tp.float16, True),
    conv_backward_case("res2 3x3", tp.float32, False),
    attention_backward_case(tp.float16, 4096),
    fft_case(),
]


# ---- timing -----------------------------------------------------------------------------
def time_gpu(fn, budget):
    """Seconds per call: the median over batches timed with CUDA events, as many calls as
    fit `budget` seconds (batches of up to 20, up to 5 of them; at least one call)."""
    torch = _torch()
    fn()                            # compiles and autotunes: not timed
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end) / 1e3, 1e-6)
    calls = int(min(max(budget / one, 1), 100))
    batch = max(1, min(20, calls // 5))
    samples = []
    for _ in range(max(1, min(5, calls // batch))):
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / batch)
    return statistics.median(samples)


def time_cpu(fn, budget):
    """The interpreter's stand-in (--smoke): wall-clock seconds of one call (the smoke
    checks that every case runs; its numbers mean nothing)."""
    start = time.perf_counter()
    fn()
    return max(time.perf_counter() - start, 1e-9)


def run_case(case, smoke, timer):
    missing = [name for name in case.needs if _function(name) is None]
    if missing:
        return dict(name=case.name, group=case.group,
                    skipped=f"tp.{missing[0]} does not exist in this build")
    try:
        tp_fn, torch_fn, work = case.build(smoke)
        t_tp = timer(tp_fn, case.budget)
        t_torch = timer(torch_fn, case.budget)
    except Exception as e:  # a benchmark reports, it does not stop at the first failure
        return dict(name=case.name, group=case.group,
                    skipped=f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
    if case.unit == "us/call":
        tp_rate, torch_rate = t_tp * 1e6, t_torch * 1e6
    else:
        scale = 1e12 if case.unit == "TFLOP/s" else 1e9
        tp_rate, torch_rate = work / t_tp / scale, work / t_torch / scale
    ratio = t_torch / t_tp
    return dict(name=case.name, group=case.group, tp=t_tp, torch=t_torch, tp_rate=tp_rate,
                torch_rate=torch_rate, unit=case.unit, ratio=ratio, target=case.target,
                ok=case.target is None or ratio >= case.target)


def run_cases(cases, smoke, timer, budget):
    """Every case in order, none started once `budget` seconds have passed."""
    start = time.perf_counter()
    results = []
    for case in cases:
        if time.perf_counter() - start > budget:
            results.append(dict(name=case.name, group=case.group,
                                skipped=f"the run's time budget ({budget:.0f} s) was spent"))
            continue
        results.append(run_case(case, smoke, timer))
    return results


def hardware():
    torch = _torch()
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return "no GPU (Triton interpreter)"


def versions():
    import triton
    return f"torch {_torch().__version__}, triton {triton.__version__}"


def markdown_table(results):
    lines = ["| group | case | TensorPlay | PyTorch | ratio | target |",
             "|---|---|---|---|---|---|"]
    for r in results:
        if "skipped" in r:
            lines.append(f"| {r['group']} | {r['name']} | skipped: {r['skipped']} | | | |")
        else:
            target = "" if r["target"] is None else \
                f"{r['target']:.2f} {'ok' if r['ok'] else 'missed'}"
            lines.append(f"| {r['group']} | {r['name']} | {r['tp_rate']:.1f} {r['unit']} | "
                         f"{r['torch_rate']:.1f} {r['unit']} | {r['ratio']:.2f} | {target} |")
    return lines


def report(results, markdown, smoke=False):
    print(f"\nTensorPlay Triton kernels vs PyTorch CUDA on {hardware()}")
    if smoke:
        print("(--smoke: tiny sizes, to check the script; the numbers mean nothing)")
    print(f"{'case':<44}{'TensorPlay':>16}{'PyTorch':>16}{'ratio':>8}  target")
    for r in results:
        if "skipped" in r:
            print(f"{r['name']:<44}  skipped: {r['skipped']}")
            continue
        verdict = "" if r["target"] is None else \
            f"  >= {r['target']:.2f} {'ok' if r['ok'] else 'MISSED'}"
        print(f"{r['name']:<44}{r['tp_rate']:>9.1f} {r['unit']:<7}"
              f"{r['torch_rate']:>9.1f} {r['unit']:<7}{r['ratio']:>8.2f}{verdict}")
    if markdown:
        print(f"\n### {datetime.date.today().isoformat()}, {hardware()}\n")
        print("\n".join(markdown_table(results)))


def write_results(path, results, smoke=False):
    """Put this run's table at the top of `path` (benchmarks/RESULTS.md), below its
    header, keeping the earlier runs."""
    path = pathlib.Path(path)
    old = path.read_text() if path.exists() else RESULTS_HEADER
    header, _, runs = old.partition("\n## ")
    title = f"## {datetime.date.today().isoformat()}, {hardware()} ({versions()})"
    if smoke:
        title += " --smoke (tiny sizes: the numbers mean nothing)"
    section = "\n".join([title, ""] + markdown_table(results)) + "\n"
    path.write_text(header.rstrip("\n") + "\n\n" + section + ("\n## " + runs if runs else ""))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes; runs under the Triton interpreter too")
    parser.add_argument("--markdown", action="store_true",
                        help="also print a table for benchmarks/RESULTS.md")
    parser.add_argument("--results", help="write the table at the top of this file "
                        "(benchmarks/RESULTS.md)")
    parser.add_argument("--only", default="",
                        help="run the cases whose name or group contains this")
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds after which no case is started (default 420)")
    args = parser.parse_args(argv)
    if not tp.cuda.is_available() and not (args.smoke and tp.cuda.is_interpreted()):
        print("no GPU available: nothing to measure (run with --smoke and "
              "TENSORPLAY_TRITON_INTERPRET=1 to check the script itself)")
        return 0
    timer = time_gpu if tp.cuda.is_available() else time_cpu
    cases = [c for c in CASES if args.only in c.name or args.only == c.group]
    results = run_cases(cases, args.smoke, timer, args.budget)
    report(results, args.markdown, args.smoke)
    if args.results:
        write_results(args.results, results, args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
