"""Random ops: reproducible under tp.manual_seed and tp.Generator, and drawn from the
right distribution (sample moments within a few standard errors; fixed seeds, so these
tests are deterministic)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp

N = 20000


def _draws():
    """One call of each random op, as (name, function of a generator)."""
    probs = tp.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    return [
        ("normal_", lambda g: tp.empty(50).normal_(1.0, 2.0, generator=g)),
        ("uniform_", lambda g: tp.empty(50).uniform_(-1.0, 3.0, generator=g)),
        ("exponential_", lambda g: tp.empty(50).exponential_(2.0, generator=g)),
        ("bernoulli", lambda g: tp.bernoulli(tp.full((50,), 0.3), generator=g)),
        ("bernoulli.p", lambda g: tp.bernoulli(tp.empty(50), 0.3, generator=g)),
        ("bernoulli_", lambda g: tp.empty(50).bernoulli_(0.3, generator=g)),
        ("multinomial", lambda g: tp.multinomial(probs, 20, True, generator=g)),
        ("multinomial without replacement", lambda g: tp.multinomial(probs[0], 3, generator=g)),
    ]


@pytest.mark.parametrize("name, draw", _draws(), ids=[n for n, _ in _draws()])
def test_reproducible_with_manual_seed_and_generators(name, draw):
    tp.manual_seed(1234)
    first = draw(None).tolist()
    tp.manual_seed(1234)
    assert draw(None).tolist() == first, "manual_seed must replay the default generator"
    g1, g2 = tp.Generator().manual_seed(7), tp.Generator().manual_seed(7)
    a = draw(g1).tolist()
    assert draw(g2).tolist() == a, "equal seeds, equal draws"
    assert draw(g1).tolist() != a, "a generator moves on after each draw"
    state = g1.get_state()
    b = draw(g1).tolist()
    g1.set_state(state)
    assert draw(g1).tolist() == b, "set_state replays from a saved state"


def _moments(t):
    x = np.asarray(t.tolist(), dtype=np.float64).ravel()
    return x.mean(), x.std()


def test_normal_moments():
    g = tp.Generator().manual_seed(0)
    mean, std = _moments(tp.empty(N, dtype=tp.float64).normal_(3.0, 0.5, generator=g))
    assert abs(mean - 3.0) < 4 * 0.5 / np.sqrt(N) and abs(std - 0.5) < 0.01


def test_uniform_range_and_moments():
    g = tp.Generator().manual_seed(1)
    t = tp.empty(N).uniform_(-2.0, 4.0, generator=g)
    x = np.asarray(t.tolist())
    assert x.min() >= -2.0 and x.max() < 4.0
    mean, std = _moments(t)
    assert abs(mean - 1.0) < 4 * 6 / np.sqrt(12 * N) and abs(std - 6 / np.sqrt(12)) < 0.03


def test_exponential_moments():
    g = tp.Generator().manual_seed(2)
    mean, std = _moments(tp.empty(N, dtype=tp.float64).exponential_(4.0, generator=g))
    assert abs(mean - 0.25) < 4 * 0.25 / np.sqrt(N) and abs(std - 0.25) < 0.01


@pytest.mark.parametrize("dtype", [tp.float32, tp.float16])
def test_bernoulli_rates_follow_each_probability(dtype):
    g = tp.Generator().manual_seed(3)
    p = tp.tensor([0.0, 0.2, 0.9, 1.0], dtype=dtype).expand(N // 4, 4)
    x = np.asarray(tp.bernoulli(p, generator=g).tolist())
    assert set(np.unique(x)) <= {0.0, 1.0}
    rates = x.mean(axis=0)
    assert rates[0] == 0.0 and rates[3] == 1.0
    assert abs(rates[1] - 0.2) < 0.03 and abs(rates[2] - 0.9) < 0.02


def test_bernoulli_inplace_with_tensor_probabilities():
    g = tp.Generator().manual_seed(4)
    x = tp.empty(N // 2, 2).bernoulli_(tp.tensor([0.25, 0.75]), generator=g)
    rates = np.asarray(x.tolist()).mean(axis=0)
    assert abs(rates[0] - 0.25) < 0.03 and abs(rates[1] - 0.75) < 0.03


def test_multinomial_frequencies_with_replacement():
    g = tp.Generator().manual_seed(5)
    w = tp.tensor([[1.0, 3.0, 0.0, 6.0], [0.0, 0.0, 2.0, 2.0]])
    picks = np.asarray(tp.multinomial(w, N // 2, True, generator=g).tolist())
    assert picks.shape == (2, N // 2)
    freq0 = np.bincount(picks[0], minlength=4) / (N // 2)
    np.testing.assert_allclose(freq0, [0.1, 0.3, 0.0, 0.6], atol=0.02)
    assert set(np.unique(picks[1])) <= {2, 3}


def test_multinomial_without_replacement_draws_distinct_categories():
    g = tp.Generator().manual_seed(6)
    w = tp.tensor([5.0, 1.0, 1.0, 1.0, 0.0])
    firsts = []
    for _ in range(2000):
        picks = tp.multinomial(w, 4, generator=g).tolist()
        assert sorted(picks) == [0, 1, 2, 3], "zero-weight categories come only when needed"
        firsts.append(picks[0])
    assert abs(np.mean(np.asarray(firsts) == 0) - 5 / 8) < 0.04
    # Zero weights come last, once the others are used up (as PyTorch does).
    assert tp.multinomial(w, 5, generator=g).tolist()[-1] == 4


def test_cuda_rng_state_and_fork_rng():
    """tp.cuda.get_rng_state / set_rng_state (PyTorch's 16 bytes: seed, offset) replay the
    cuda draws, and fork_rng puts the cuda generator back as well as the CPU one."""
    tp.manual_seed(11)
    state = tp.cuda.get_rng_state()
    assert state.dtype == tp.uint8 and tuple(state.shape) == (16,)
    first = tp.empty(8, device="cuda").uniform_().cpu().tolist()
    tp.cuda.set_rng_state(state)
    assert tp.empty(8, device="cuda").uniform_().cpu().tolist() == first
    with tp.random.fork_rng():
        tp.empty(8, device="cuda").uniform_()
    after = tp.empty(8, device="cuda").uniform_().cpu().tolist()
    tp.cuda.set_rng_state(state)
    tp.empty(8, device="cuda").uniform_()
    assert tp.empty(8, device="cuda").uniform_().cpu().tolist() == after
    with pytest.raises(ValueError, match="16 bytes"):
        tp.cuda.set_rng_state(tp.random.get_rng_state())
