"""Kernel selection, measured: does each choice earn its place? All ratios come from
one run, the two sides timed in alternation (common.paired_min).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_kernel_selection.py

1. Specialised CPU candidates against the generic kernel on their shapes (both called
   directly, same arguments): the 1x1 convolution, forward and backward; for
   3x3 convolution by Winograd (tp.backends.cpu.allow_winograd) against the same-size
   form, forward and backward (grad_input and grad_weight); for
   channels_last inputs, the NHWC 1x1 convolution and batch_norm against the NCHW kernel
   reached through the layout-conversion fallback (its two copies included), and the
   NHWC max and average pooling, forward and backward, the same way. The issue's
   bar is 1.2x; a candidate that does not clear it is not registered.
2. The execution-plan cache on and off, for a loop of small conv2d calls (forward), a
   three-operand einsum and (with a GPU) pointwise ops: the plan is the im2col geometry,
   the contraction path, the Triton launch plan.
3. Tuned against static priority for matmul: a second `mm` candidate (an einsum
   product, registered here at a higher static priority than the BLAS kernel, as a
   plausible-looking specialisation that is in fact slower) against the choice
   tp.dispatch.tune makes after timing both.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, paired_min  # noqa: E402

import tensorplay as tp  # noqa: E402
from cpu_kernels import conv  # noqa: E402
from cpu_kernels._common import out  # noqa: E402
from tensorplay.dispatch.plan_cache import plans  # noqa: E402

F = tp.nn.functional


def row(label, generic, special, bar=None):
    ratio = generic / special
    verdict = "" if bar is None else ("  earns its place" if ratio >= bar else "  BELOW the bar")
    print(f"  {label:<44}{fmt_time(generic)} {fmt_time(special)}  {ratio:5.2f}x{verdict}")


def specialised_conv():
    print("\n1. specialised CPU candidates vs the generic kernel (generic, specialised, ratio)")
    rng = np.random.default_rng(0)
    for shape, c_out in (((8, 64, 14, 14), 128), ((32, 32, 8, 8), 64), ((1, 256, 7, 7), 256),
                         ((64, 16, 4, 4), 16)):
        x = tp.from_numpy(rng.standard_normal(shape).astype(np.float32))
        w = tp.from_numpy(rng.standard_normal((c_out, shape[1], 1, 1)).astype(np.float32))
        b = tp.from_numpy(rng.standard_normal(c_out).astype(np.float32))
        g = tp.from_numpy(rng.standard_normal((shape[0], c_out) + shape[2:])
                          .astype(np.float32))
        args = (x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        t_generic, t_special = paired_min(lambda: conv.convolution(*args),
                                          lambda: conv.convolution_1x1(*args),
                                          batch=5, rounds=15)
        row(f"conv2d 1x1 fwd {shape} -> {c_out}", t_generic, t_special, bar=1.2)
        bargs = (g, x, w, [c_out], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                 [True, True, True])
        t_generic, t_special = paired_min(lambda: conv.convolution_backward(*bargs),
                                          lambda: conv.convolution_backward_1x1(*bargs),
                                          batch=5, rounds=15)
        row(f"conv2d 1x1 bwd {shape} -> {c_out}", t_generic, t_special, bar=1.2)
    winograd_vs_same(rng)


def winograd_vs_same(rng):
    """Winograd's 3x3 convolution (tp.backends.cpu.allow_winograd) against the same-size
    form it replaces, where its shape rule admits it."""
    tp.backends.cpu.allow_winograd = True
    try:
        for shape, c_out in (((16, 32, 16, 16), 32), ((8, 64, 14, 14), 64),
                             ((4, 32, 28, 28), 32)):
            x = tp.from_numpy(rng.standard_normal(shape).astype(np.float32))
            w = tp.from_numpy(rng.standard_normal((c_out, shape[1], 3, 3)).astype(np.float32))
            g = tp.from_numpy(rng.standard_normal((shape[0], c_out) + shape[2:])
                              .astype(np.float32))
            args = (x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
            t_same, t_winograd = paired_min(lambda: conv.convolution_same(*args),
                                            lambda: conv.convolution_winograd(*args),
                                            batch=3, rounds=15)
            row(f"conv2d 3x3 Winograd fwd {shape} -> {c_out}", t_same, t_winograd, bar=1.2)
            bargs = (g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                     [True, True, False])
            t_same, t_winograd = paired_min(
                lambda: conv.convolution_backward_same(*bargs),
                lambda: conv.convolution_backward_winograd(*bargs), batch=3, rounds=15)
            row(f"conv2d 3x3 Winograd bwd {shape} -> {c_out}", t_same, t_winograd, bar=1.2)
    finally:
        tp.backends.cpu.allow_winograd = False


def nhwc_vs_fallback():
    print("\n   NHWC candidates vs the NCHW kernel through the layout fallback, channels_last "
          "input (fallback, NHWC, ratio)")
    from cpu_kernels import normalization as nn_norm
    rng = np.random.default_rng(2)
    cl = tp.channels_last
    # (batch_norm NHWC is registered from 8 channels up: at 3, its backward measured 0.7-0.9x)
    for shape in ((8, 64, 14, 14), (32, 32, 8, 8), (4, 64, 8, 8)):
        x = tp.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(memory_format=cl)
        c = shape[1]
        w = tp.from_numpy(rng.standard_normal((2 * c, c, 1, 1)).astype(np.float32))
        args = (x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)

        def conv_fallback():
            nchw = (x.contiguous(),) + args[1:]
            conv.convolution(*nchw).contiguous(memory_format=cl)
        t_fallback, t_nhwc = paired_min(conv_fallback,
                                        lambda: conv.convolution_1x1_nhwc(*args),
                                        batch=5, rounds=15)
        row(f"conv2d 1x1 fwd NHWC {shape} -> {2 * c}", t_fallback, t_nhwc, bar=1.2)
        bn = (None, None, None, None, True, 0.1, 1e-5)

        def bn_fallback():
            y, _, _ = nn_norm.native_batch_norm(x.contiguous(), *bn)
            y.contiguous(memory_format=cl)
        t_fallback, t_nhwc = paired_min(bn_fallback,
                                        lambda: nn_norm.native_batch_norm_nhwc(x, *bn),
                                        batch=5, rounds=15)
        row(f"batch_norm fwd NHWC {shape}", t_fallback, t_nhwc, bar=1.2)
    nhwc_pooling(rng)


def nhwc_pooling(rng):
    """The NHWC pooling kernels against the NCHW ones through the fallback (its two copies
    included), forward and backward."""
    from cpu_kernels import pooling
    cl = tp.channels_last
    # (every NHWC pooling kernel is registered for every width: the 3-channel rows show why)
    for shape in ((8, 64, 28, 28), (32, 32, 8, 8), (4, 3, 32, 32)):
        x = tp.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(memory_format=cl)
        for label, name, args in (
                ("max_pool2d 3x3 s2 p1", "max_pool2d_with_indices",
                 ((3, 3), (2, 2), (1, 1), (1, 1), False)),
                ("avg_pool2d 2x2 s2", "avg_pool2d",
                 ((2, 2), (2, 2), (0, 0), False, True, None)),
                ("adaptive_avg_pool2d -> 1x1", "adaptive_avg_pool2d", ((1, 1),))):
            nchw, nhwc = getattr(pooling, name), getattr(pooling, name + "_nhwc")

            def fallback():
                results = nchw(x.contiguous(), *args)
                for r in results if isinstance(results, tuple) else (results,):
                    r.contiguous(memory_format=cl)
            t_fallback, t_nhwc = paired_min(fallback, lambda: nhwc(x, *args),
                                            batch=5, rounds=15)
            row(f"{label} fwd NHWC {shape}", t_fallback, t_nhwc, bar=1.2)
            result = nhwc(x, *args)
            y = result[0] if isinstance(result, tuple) else result
            g = tp.from_numpy(rng.standard_normal(y.shape).astype(np.float32)) \
                .to(memory_format=cl)
            tail = (result[1],) if isinstance(result, tuple) else ()
            bargs = () if name.startswith("adaptive") else args    # its backward takes none
            back, back_nhwc = (getattr(pooling, name + "_backward"),
                               getattr(pooling, name + "_backward_nhwc"))

            def back_fallback():
                flat_tail = tuple(t.contiguous() for t in tail)
                back(g.contiguous(), x.contiguous(), *bargs, *flat_tail) \
                    .contiguous(memory_format=cl)
            t_fallback, t_nhwc = paired_min(back_fallback,
                                            lambda: back_nhwc(g, x, *bargs, *tail),
                                            batch=5, rounds=15)
            row(f"{label} bwd NHWC {shape}", t_fallback, t_nhwc, bar=1.2)


def _plans_off(fn):
    def run():
        plans.enabled = False
        try:
            fn()
        finally:
            plans.enabled = True
    return run


def plan_cache():
    print("\n2. execution-plan cache: off vs on (time per loop, ratio = off / on)")
    rng = np.random.default_rng(1)
    for shape, c_out, k in (((1, 3, 8, 8), 8, 3), ((4, 8, 16, 16), 8, 3), ((2, 4, 6, 6), 4, 5)):
        x = tp.from_numpy(rng.standard_normal(shape).astype(np.float32))
        w = tp.from_numpy(rng.standard_normal((c_out, shape[1], k, k)).astype(np.float32))

        def loop():
            for _ in range(10):
                F.conv2d(x, w, padding=1)
        t_on, t_off = paired_min(loop, _plans_off(loop), batch=3, rounds=15)
        row(f"10 x conv2d {shape} k={k}", t_off, t_on)
    operands = [tp.rand(8, 16), tp.rand(16, 4), tp.rand(4, 32)]

    def einsum_loop():
        for _ in range(10):
            tp.einsum("ij,jk,kl->il", *operands)
    t_on, t_off = paired_min(einsum_loop, _plans_off(einsum_loop), batch=3, rounds=15)
    row("10 x einsum ij,jk,kl->il (contraction path)", t_off, t_on)
    if tp.cuda.is_available():
        a = tp.randn(64, 33, device="cuda")
        b = tp.randn(33, device="cuda")

        def cuda_loop():
            for _ in range(5):
                a * b + a
        t_on, t_off = paired_min(cuda_loop, _plans_off(cuda_loop), batch=2, rounds=5)
        mode = "interpreter" if tp.cuda.is_interpreted() else "GPU"
        row(f"5 x (a * b + a) cuda [{mode}]", t_off, t_on)


def einsum_mm(self, mat2):
    return out(np.einsum("ij,jk->ik", self._impl.array(), mat2._impl.array()),
               self._impl.dtype)


def tuned_matmul():
    print("\n3. matmul: static priority vs tuned (static, tuned, ratio = static / tuned)")
    lib = tp.library.Library("CPU", "bench: an einsum mm")
    lib.impl("mm", einsum_mm, name="einsum_mm", priority=20,
             dtypes={tp.float32, tp.float64}, contiguous=True)
    os.environ.setdefault("TP_TUNE_CACHE", os.path.join(tempfile.mkdtemp(), "tuned.json"))
    for n in (16, 64, 256):
        a, b = tp.rand(n, n), tp.rand(n, n)
        tp.dispatch.enable_tuning(False)

        def static():
            tp.mm(a, b)
        static()
        chosen = tp.dispatch.tune("mm", (a, b))

        def tuned():
            tp.mm(a, b)
        tp.dispatch.enable_tuning(False)
        t_static = paired_min(static, lambda: None, batch=10, rounds=10)[0]
        tp.dispatch.enable_tuning(True)
        t_tuned = paired_min(tuned, lambda: None, batch=10, rounds=10)[0]
        row(f"tp.mm {n}x{n} (tuned choice: {chosen.rsplit('.', 1)[-1]})", t_static, t_tuned)
    tp.dispatch.enable_tuning(False)


if __name__ == "__main__":
    specialised_conv()
    nhwc_vs_fallback()
    plan_cache()
    tuned_matmul()
