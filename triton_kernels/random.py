"""multinomial on the `cuda` device: category indices drawn with the weights in each row.

With replacement, inverse-CDF sampling (one program per row and block of samples):

    cdf = cumsum(w);  u ~ U[0, 1)
    sample = the first j with cdf[j] / cdf[N-1] > u = #{ j < N-1 : cdf[j] / cdf[N-1] <= u }

(zero weights repeat a cdf value, so they are never drawn; the last category closes
the interval, as the CPU kernel's cdf[-1] = 1). Without replacement, an exponential
race, equivalent to drawing one at a time and renormalising:

    key[j] = Exp(1) / w[j]  (inf for w[j] == 0);  samples = the num_samples smallest keys

by the stable top-k of triton_kernels/_row_sort.py, so zero-weight categories come
last, in index order, once the others are used up (as PyTorch). Uniforms come from
Philox (tl.rand) at the cuda generator's seed and offset, as dropout's.
"""
from __future__ import annotations

import logging
import zlib

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay import _random_draws as draws
from tensorplay._device_transfer import from_host, to_host
from tensorplay._random import philox_inputs
from tensorplay.errors import ArgumentError
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from triton_kernels import _row_sort as row_sort
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels.pointwise import run

MAX_BLOCK = 4096 if INTERPRETED else 1024
MAX_BLOCK_S = 64


@triton.jit
def inverse_cdf_kernel(
    cdf_ptr,  # [M, N] running sums of each row's weights, contiguous
    out_ptr,  # [M, S] int64 samples
    N, S,
    seed, offset,  # Philox: sample s of row m uses counter offset + m * S + s
    BLOCK_S: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    base = row.to(tl.int64) * N
    total = tl.load(cdf_ptr + base + N - 1)
    u = tl.rand(seed, offset + row * S + s)
    count = tl.zeros([BLOCK_S], tl.int64)
    for j0 in range(0, N - 1, BLOCK_N):
        j = j0 + tl.arange(0, BLOCK_N)
        inside = j < N - 1
        c = tl.load(cdf_ptr + base + j, mask=inside, other=0)
        below = inside[None, :] & (c[None, :] / total <= u[:, None])
        count += tl.sum(below.to(tl.int64), axis=1)
    tl.store(out_ptr + row.to(tl.int64) * S + s, count, mask=s < S)


@triton.jit
def exponential_keys_kernel(
    w_ptr,  # [n] weights, contiguous
    keys_ptr,  # [n] float32: Exp(1) / w
    n,
    seed, offset,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    w = tl.load(w_ptr + i, mask=mask, other=0).to(tl.float32)
    u = tl.rand(seed, offset + i)
    key = -tl.log(1.0 - u) / w          # 1 - u lies in (0, 1]: a finite Exp(1) draw
    tl.store(keys_ptr + i, tl.where(w > 0, key, float("inf")), mask=mask)


def _philox(generator, count):
    """(seed, offset) for `count` draws: the generator's own stream when one is given,
    else the cuda default generator's (whose offset moves past them)."""
    return philox_inputs(generator, count)


def _check_weights(w):
    """The CPU kernel's checks: finite, non-negative weights and a positive sum per row.
    One host sync for both flags."""
    not_finite = call_below_autograd("logical_not", call_below_autograd("isfinite", w))
    negative = call_below_autograd("lt.Scalar", w, 0)
    bad = call_below_autograd("any", call_below_autograd("logical_or", not_finite, negative))
    row_sums = call_below_autograd("sum.dim_IntList", w, (1,), False, None)
    empty = call_below_autograd("any", call_below_autograd("le.Scalar", row_sums, 0))
    bad, empty = call_below_autograd("stack", [bad, empty], 0).tolist()
    if bad:
        raise ArgumentError("multinomial(): argument 'self' must hold finite, non-negative "
                            "weights", op="multinomial", arg="self")
    if empty:
        raise ArgumentError("multinomial(): every row of argument 'self' needs a positive "
                            "weight sum", op="multinomial", arg="self")


def multinomial(self, num_samples, replacement, generator):
    spec = shape_rule("random.multinomial")(
        "multinomial", (self, num_samples, replacement, generator))
    device, (self,) = operands("multinomial", self=self)
    N = self._impl.sizes[-1]
    w = self.reshape([-1, N])
    M = w._impl.sizes[0]
    _check_weights(w)
    if replacement:
        acc = dt.float64 if self._impl.dtype is dt.float64 else dt.float32
        cdf = call_below_autograd("cumsum", w, 1, acc)
        samples = new_tensor([M, num_samples], dt.int64, device)
        seed, offset = _philox(generator, M * num_samples)
        block_s = min(triton.next_power_of_2(num_samples), MAX_BLOCK_S)
        block_n = max(16, min(triton.next_power_of_2(N), MAX_BLOCK // block_s))
        launch("multinomial", inverse_cdf_kernel, (M, triton.cdiv(num_samples, block_s)),
               pointer(cdf), pointer(samples), N, num_samples, seed, offset,
               BLOCK_S=block_s, BLOCK_N=block_n)
    else:
        if not w.is_contiguous():
            w = w.contiguous()
        keys = new_tensor([M, N], dt.float32, device)
        seed, offset = _philox(generator, M * N)
        block = min(triton.next_power_of_2(M * N), MAX_BLOCK)
        launch("multinomial", exponential_keys_kernel, (triton.cdiv(M * N, block),),
               pointer(w), pointer(keys), M * N, seed, offset, BLOCK=block)
        # The num_samples smallest keys: a top-k, not a sort of the row.
        samples = new_tensor([M, num_samples], dt.int64, device)
        smallest = new_tensor([M, num_samples], dt.float32, device)
        row_sort.smallest_rows("multinomial", keys, 1, num_samples, smallest, samples, False)
    return samples.view(spec.sizes)


# ---- binomial and poisson: on a host copy ------------------------------------------------
# Their rejection samplers draw a different number of uniforms per element, a loop of its
# own per element: no Triton kernel here. They run on a host copy, logged, with the
# draws of the CPU kernels from a generator seeded by the Philox (seed, offset) the call
# takes, so that tp.manual_seed makes them reproducible on `cuda` too.
log = logging.getLogger(__name__)


def _host_generator(generator, count):
    from tensorplay._random import Generator    # (the CPU generator class, not a draw)
    seed, offset = _philox(generator, count)
    return Generator().manual_seed(zlib.crc32(f"{seed}:{offset}".encode()))


def _host_copy(op, t):
    log.info("%s on cuda: no Triton kernel, the CPU sampler on a host copy", op)
    if not t._impl.is_contiguous:        # (to_host reads dense memory)
        dense = new_tensor(t._impl.sizes, t._impl.dtype, t._impl.device)
        run("copy", dense, (t,), t._impl.dtype)
        t = dense
    return to_host(t)


def poisson_on_host(self, generator):
    """poisson on a host copy of the rates."""
    spec = shape_rule("random.poisson")("poisson", (self, generator))
    device, (self,) = operands("poisson", self=self)
    rates = _host_copy("poisson", self).astype(np.float64)
    if rates.size and not (rates >= 0).all():
        raise ArgumentError("poisson(): invalid Poisson rate, expected rate to be "
                            "non-negative (argument 'self')", op="poisson", arg="self")
    gen = _host_generator(generator, rates.size)
    return from_host(draws.poisson(gen, rates), spec.dtype, device)


def binomial_on_host(count, prob, generator):
    """binomial on host copies of count and prob."""
    spec = shape_rule("random.binomial")("binomial", (count, prob, generator))
    device, (count, prob) = operands("binomial", count=count, prob=prob)
    counts = np.array(np.broadcast_to(_host_copy("binomial", count), spec.sizes), order="C")
    probs = np.array(np.broadcast_to(_host_copy("binomial", prob), spec.sizes), order="C")
    gen = _host_generator(generator, counts.size)
    return from_host(draws.binomial(gen, counts, probs), spec.dtype, device)
