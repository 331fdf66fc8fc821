"""Determinism: the same seed gives bit-identical results for every random op, on the
CPU and on the cuda device (the Triton interpreter without a GPU).

The dispatched random ops are found by walking ops.yaml for the `random` tag, so a new
one cannot be added without a call here; the random functions that are not dispatched
ops (factories, dropout, nn.init, ...) are listed by hand. A different seed must change
each result, or a test of equality could not fail.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F
import tensorplay.nn.init as init
from tensorplay.codegen.yaml_loader import load_ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANDOM_OPS = sorted(e.schema.name.full for e in load_ops(os.path.join(ROOT, "ops.yaml"))
                    if "random" in e.tags)

DEVICES = ["cpu"]
if tp.cuda.is_available() or tp.cuda.is_interpreted():
    DEVICES.append("cuda")

SHAPE = (6, 7)


def _probs(d):
    return tp.linspace(0.05, 0.95, 42, device=d).view(SHAPE)


# One call per overload tagged `random` in ops.yaml: (device, generator or None) -> tensor
DISPATCHED = {
    "normal_": lambda d, g: tp.empty(SHAPE, device=d).normal_(0.5, 2.0, generator=g),
    "uniform_": lambda d, g: tp.empty(SHAPE, device=d).uniform_(-1.0, 3.0, generator=g),
    "exponential_": lambda d, g: tp.empty(SHAPE, device=d).exponential_(1.5, generator=g),
    "bernoulli": lambda d, g: tp.bernoulli(_probs(d), generator=g),
    "bernoulli.p": lambda d, g: tp.bernoulli(tp.empty(SHAPE, device=d), 0.3, generator=g),
    "bernoulli_.float": lambda d, g: tp.empty(SHAPE, device=d).bernoulli_(0.4, generator=g),
    "bernoulli_.Tensor": lambda d, g: tp.empty(SHAPE, device=d).bernoulli_(_probs(d),
                                                                            generator=g),
    "multinomial": lambda d, g: tp.multinomial(_probs(d), 4, generator=g),
    "random_": lambda d, g: tp.empty(SHAPE, device=d).random_(generator=g),
    "random_.to": lambda d, g: tp.empty(SHAPE, device=d).random_(1000, generator=g),
    "random_.from": lambda d, g: tp.empty(SHAPE, dtype=tp.int64, device=d).random_(
        -5, 2 ** 40, generator=g),
    "cauchy_": lambda d, g: tp.empty(SHAPE, device=d).cauchy_(0.5, 2.0, generator=g),
    "log_normal_": lambda d, g: tp.empty(SHAPE, device=d).log_normal_(generator=g),
    "geometric_": lambda d, g: tp.empty(SHAPE, device=d).geometric_(0.3, generator=g),
    "poisson": lambda d, g: tp.poisson(_probs(d) * 20, generator=g),
    "binomial": lambda d, g: tp.binomial(_probs(d) * 30, _probs(d), generator=g),
}

# Random functions that are not dispatched ops (they draw through the ones above or
# from the generator directly): device -> tensor, drawing from the default generator.
UNDISPATCHED = {
    "rand": lambda d: tp.rand(SHAPE, device=d),
    "randn": lambda d: tp.randn(SHAPE, device=d),
    "randint": lambda d: tp.randint(-5, 50, SHAPE, device=d),
    "randperm": lambda d: tp.randperm(40, device=d),
    "rand_like": lambda d: tp.rand_like(tp.empty(SHAPE, device=d)),
    "randn_like": lambda d: tp.randn_like(tp.empty(SHAPE, device=d)),
    "randint_like": lambda d: tp.randint_like(tp.empty(SHAPE, device=d), 3, 90),
    "multinomial replacement": lambda d: tp.multinomial(_probs(d), 20, replacement=True),
    "dropout": lambda d: F.dropout(tp.ones(SHAPE, device=d), 0.4),
    "dropout2d": lambda d: F.dropout2d(tp.ones(2, 6, 3, 3, device=d), 0.5),
    "alpha_dropout": lambda d: F.alpha_dropout(tp.ones(SHAPE, device=d), 0.4, training=True),
    "feature_alpha_dropout": lambda d: F.feature_alpha_dropout(tp.ones(2, 6, 3, 3, device=d),
                                                               0.5, training=True),
    "rrelu": lambda d: F.rrelu(-tp.ones(SHAPE, device=d), training=True),
    "gumbel_softmax": lambda d: F.gumbel_softmax(tp.zeros(SHAPE, device=d), tau=0.5),
    "init.uniform_": lambda d: init.uniform_(tp.empty(SHAPE, device=d)),
    "init.normal_": lambda d: init.normal_(tp.empty(SHAPE, device=d)),
    "init.trunc_normal_": lambda d: init.trunc_normal_(tp.empty(SHAPE, device=d)),
    "init.kaiming_uniform_": lambda d: init.kaiming_uniform_(tp.empty(SHAPE, device=d)),
    "init.xavier_normal_": lambda d: init.xavier_normal_(tp.empty(SHAPE, device=d)),
    "init.orthogonal_": lambda d: init.orthogonal_(tp.empty(SHAPE, device=d)),
    "init.sparse_": lambda d: init.sparse_(tp.empty(SHAPE, device=d), 0.5),
    "nn.Linear": lambda d: tp.nn.Linear(7, 6).to(d).weight.detach(),
}


def _host(t):
    return t.detach().cpu().numpy().copy()


def _seeded(seed, make):
    tp.manual_seed(seed)
    return _host(make())


def _assert_bit_identical(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def test_every_random_op_of_ops_yaml_has_a_call_here():
    assert sorted(DISPATCHED) == RANDOM_OPS


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(DISPATCHED))
def test_a_random_op_repeats_under_the_same_seed(device, name):
    call = DISPATCHED[name]
    first = _seeded(3, lambda: call(device, None))
    _assert_bit_identical(_seeded(3, lambda: call(device, None)), first)
    assert _seeded(4, lambda: call(device, None)).tobytes() != first.tobytes()
    # An explicit generator with the same seed draws the same numbers, whatever the
    # default generator's state. (On cpu they are the default generator's numbers; on
    # cuda the generator seeds the Philox stream, as PyTorch's CUDA generators do.)
    def with_generator(seed):
        tp.manual_seed(99 + seed)
        return _host(call(device, tp.Generator().manual_seed(seed)))
    own = with_generator(3)
    _assert_bit_identical(with_generator(3), own)
    assert with_generator(4).tobytes() != own.tobytes()
    if device == "cpu":
        _assert_bit_identical(own, first)


SLOW_ON_CUDA = {"init.sparse_", "init.trunc_normal_"}   # about 1 s each in the interpreter
FUNCTION_CASES = [pytest.param(device, name, marks=pytest.mark.slow)
                  if device == "cuda" and name in SLOW_ON_CUDA else (device, name)
                  for device in DEVICES for name in sorted(UNDISPATCHED)]


@pytest.mark.parametrize("device, name", FUNCTION_CASES)
def test_a_random_function_repeats_under_the_same_seed(device, name):
    call = UNDISPATCHED[name]
    first = _seeded(5, lambda: call(device))
    _assert_bit_identical(_seeded(5, lambda: call(device)), first)
    assert _seeded(6, lambda: call(device)).tobytes() != first.tobytes()


@pytest.mark.parametrize("device", DEVICES)
def test_a_sequence_of_draws_repeats_and_rng_state_restores_it(device):
    """The stream, not only its first draw: a mixed sequence repeats under one seed, and
    get_rng_state/set_rng_state (the CPU generator's state, as in PyTorch) replay it from
    the middle."""
    def sequence():
        return [_host(make(device)) for make in (UNDISPATCHED["rand"], UNDISPATCHED["dropout"],
                                                 UNDISPATCHED["randperm"])]
    tp.manual_seed(11)
    first = sequence()
    state = tp.get_rng_state()
    second = sequence()
    tp.manual_seed(11)
    for a, b in zip(sequence() + sequence(), first + second):
        _assert_bit_identical(a, b)
    if device == "cpu":
        tp.set_rng_state(state)
        for a, b in zip(sequence(), second):
            _assert_bit_identical(a, b)


def test_cpu_and_cuda_factories_draw_the_same_numbers():
    """The random factories draw on the host from the CPU generator, then copy: a seeded
    program gets the same tensors on both devices (the in-place fills and dropout on cuda
    draw from the Philox stream instead)."""
    if "cuda" not in DEVICES:
        pytest.skip("no cuda device and no Triton interpreter")
    for name in ("rand", "randn", "randint", "randperm", "rand_like", "randint_like"):
        cpu = _seeded(7, lambda: UNDISPATCHED[name]("cpu"))
        cuda = _seeded(7, lambda: UNDISPATCHED[name]("cuda"))
        np.testing.assert_array_equal(cuda, cpu, err_msg=name)
