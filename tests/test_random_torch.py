"""Same seed, same numbers as PyTorch on the CPU: after the same `manual_seed` every
random op gives PyTorch's values bit for bit, and the generator state (bytes included)
stays in step with PyTorch's across a sequence of mixed calls."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn.functional as TF

SEEDS = [0, 1, 2 ** 40 + 3, -7]
SIZES = [(), (1,), (15,), (16,), (17,), (1000,), (3, 5, 7)]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _seed(s):
    tp.manual_seed(s)
    torch.manual_seed(s)


def _np(t):
    """Values as NumPy, half and bfloat16 widened exactly to float32."""
    if isinstance(t, torch.Tensor):
        t = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
        return t.detach().numpy()
    t = t.float() if t.dtype in (tp.float16, tp.bfloat16) else t
    return t.detach().numpy()


def _same(a, b):
    x, y = _np(a), _np(b)
    assert x.shape == y.shape, (x.shape, y.shape)
    assert x.dtype == y.dtype, (x.dtype, y.dtype)
    bad = ~((x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else (x == y))
    assert not bad.any(), f"{bad.sum()} of {bad.size} differ; first at " \
                          f"{np.argwhere(bad)[0]}: {x[bad][0]!r} vs {y[bad][0]!r}"


def _in_step():
    """The whole generator state, byte for byte, equals PyTorch's."""
    assert np.array_equal(tp.get_rng_state().numpy(), torch.get_rng_state().numpy())


# ---- creation ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", SEEDS)
def test_rand_and_randn_match_torch(seed, dtype):
    _seed(seed)
    for size in SIZES:
        _same(tp.randn(size, dtype=getattr(tp, dtype)), torch.randn(size, dtype=getattr(torch, dtype)))
        _same(tp.rand(size, dtype=getattr(tp, dtype)), torch.rand(size, dtype=getattr(torch, dtype)))
        _in_step()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_randn_matches_torch_bit_for_bit(dtype):
    """Enough draws to meet the rare inputs where NumPy's log or a float32 fma emulation
    could round differently from PyTorch's."""
    _seed(2024)
    _same(tp.randn(200_003, dtype=getattr(tp, dtype)),
          torch.randn(200_003, dtype=getattr(torch, dtype)))
    _same(tp.empty(50_001, dtype=getattr(tp, dtype)).normal_(-1.5, 3.25),
          torch.empty(50_001, dtype=getattr(torch, dtype)).normal_(-1.5, 3.25))
    _in_step()


@pytest.mark.parametrize("seed", SEEDS)
def test_randint_and_randperm_match_torch(seed):
    _seed(seed)
    for low, high in [(0, 10), (-5, 3), (0, 2 ** 32), (-3, 2 ** 40), (7, 8)]:
        for dtype in ["int64", "int32", "float32", "float64"]:
            if dtype in ("int32", "float32") and high - low > 2 ** 24:
                continue
            _same(tp.randint(low, high, (17,), dtype=getattr(tp, dtype)),
                  torch.randint(low, high, (17,), dtype=getattr(torch, dtype)))
    _same(tp.randint(5, (2, 3)), torch.randint(5, (2, 3)))
    for n in [0, 1, 2, 10, 1000]:
        _same(tp.randperm(n), torch.randperm(n))
    _same(tp.randperm(20, dtype=tp.float32), torch.randperm(20, dtype=torch.float32))
    _in_step()


def _layouts(module, shape=(6, 10)):
    """The same layouts in both libraries: contiguous, transposed, strided slice,
    permuted 3-d."""
    return [
        module.empty(shape),
        module.empty(shape[::-1]).t(),
        module.empty(shape[0], 2 * shape[1])[:, ::2],
        module.empty(4, 3, 5).permute(2, 0, 1),
        module.empty(()),
    ]


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_inplace_random_ops_on_any_layout_match_torch(seed):
    _seed(seed)
    ops = [
        lambda t: t.normal_(0.5, 2.0),
        lambda t: t.uniform_(-2.3, 3.7),
        lambda t: t.exponential_(1.5),
        lambda t: t.bernoulli_(0.3),
    ]
    for op in ops:
        for a, b in zip(_layouts(tp), _layouts(torch)):
            _same(op(a), op(b))
            _in_step()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_forms_match_torch(dtype):
    _seed(11)
    p_np = np.random.default_rng(0).random((5, 8)).astype(dtype)
    p_tp, p_t = tp.tensor(p_np), torch.tensor(p_np)
    _same(tp.bernoulli(p_tp), torch.bernoulli(p_t))
    _same(tp.bernoulli(p_tp.t()), torch.bernoulli(p_t.t()))
    _same(tp.bernoulli(p_tp, 0.25), torch.bernoulli(p_t, 0.25))
    _same(tp.zeros(5, 8, dtype=getattr(tp, dtype)).bernoulli_(p_tp[0]),
          torch.zeros(5, 8, dtype=getattr(torch, dtype)).bernoulli_(p_t[0]))
    _same(tp.zeros(8, 5).t().bernoulli_(p_tp), torch.zeros(8, 5).t().bernoulli_(p_t))
    _in_step()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_matches_torch(dtype):
    _seed(5)
    w = np.random.default_rng(1).random((4, 9)).astype(dtype)
    w[1, 3] = 0
    for args in [(1,), (4,), (9,), (30, True), (1, True)]:
        _same(tp.multinomial(tp.tensor(w), *args), torch.multinomial(torch.tensor(w), *args))
        _same(tp.multinomial(tp.tensor(w[0]), *args), torch.multinomial(torch.tensor(w[0]), *args))
    _in_step()


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_of_no_rows_draws_nothing(replacement):
    got = tp.multinomial(tp.ones(0, 3), 2, replacement)
    expected = torch.multinomial(torch.ones(0, 3), 2, replacement)
    assert tuple(got.shape) == tuple(expected.shape) == (0, 2) and got.dtype == tp.int64


@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 1.0])
def test_dropout_matches_torch(p):
    _seed(3)
    x = np.random.default_rng(2).standard_normal((8, 13)).astype(np.float32)
    _same(TF.dropout(tp.tensor(x), p), torch.nn.functional.dropout(torch.tensor(x), p))
    _same(tp.nn.Dropout(p)(tp.tensor(x)), torch.nn.Dropout(p)(torch.tensor(x)))
    _same(TF.dropout(tp.tensor(x).t(), p), torch.nn.functional.dropout(torch.tensor(x).t(), p))
    out, mask = tp.native_dropout(tp.tensor(x), p, True)
    ref_out, ref_mask = torch.native_dropout(torch.tensor(x), p, True)
    _same(out, ref_out)
    _same(mask, ref_mask)
    _in_step()


def test_dropout_gradient_is_the_noise():
    _seed(4)
    x = np.random.default_rng(3).standard_normal(40).astype(np.float32)
    a, b = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    TF.dropout(a, 0.4).sum().backward()
    torch.nn.functional.dropout(b, 0.4).sum().backward()
    _same(a.grad, b.grad)


def test_rand_like_and_randn_like_follow_the_layout_as_torch():
    _seed(8)
    for a, b in zip(_layouts(tp), _layouts(torch)):
        _same(tp.rand_like(a), torch.rand_like(b))
        _same(tp.randn_like(a), torch.randn_like(b))
        _same(tp.randn_like(a, dtype=tp.float64), torch.randn_like(b, dtype=torch.float64))
    _in_step()


# ---- the stream and the generators ---------------------------------------------------------
def test_mixed_sequence_stays_in_step():
    """The normal cache, odd/even scalar draws, 32- and 64-bit words interleaved."""
    _seed(99)
    calls = [
        lambda m: m.randn(3),                               # leaves a cached normal
        lambda m: m.randn(5, dtype=m.float64),              # uses it first
        lambda m: m.rand(2),
        lambda m: m.randint(0, 7, (5,)),
        lambda m: m.randn(20),
        lambda m: m.empty(1).normal_(),
        lambda m: m.randperm(9),
        lambda m: m.rand(3, dtype=m.float64),
        lambda m: m.empty(4).exponential_(),
        lambda m: m.bernoulli(m.full((6,), 0.5)),
        lambda m: m.randn(33, dtype=m.float16),
        lambda m: m.randn(1),
    ]
    for call in calls:
        _same(call(tp), call(torch))
        _in_step()


def test_generators_match_torch_and_leave_the_default_alone():
    _seed(0)
    g, h = tp.Generator(), torch.Generator()
    assert np.array_equal(g.get_state().numpy(), h.get_state().numpy()), \
        "a new Generator starts from PyTorch's default seed"
    assert g.initial_seed() == h.initial_seed() == 67280421310721
    g.manual_seed(42)
    h.manual_seed(42)
    _same(tp.randn(7, generator=g), torch.randn(7, generator=h))
    _same(tp.empty(20).uniform_(generator=g), torch.empty(20).uniform_(generator=h))
    _same(tp.randperm(12, generator=g), torch.randperm(12, generator=h))
    _same(tp.randint(0, 9, (4,), generator=g), torch.randint(0, 9, (4,), generator=h))
    assert np.array_equal(g.get_state().numpy(), h.get_state().numpy())
    _in_step()          # the default generators did not move
    _same(tp.randn(4), torch.randn(4))


def test_state_round_trip_and_interchange_with_torch():
    _seed(5)
    tp.randn(3)          # odd count: the state includes a cached normal
    torch.randn(3)
    state = tp.get_rng_state()
    assert state.dtype == tp.uint8 and tuple(state.shape) == (5056,)
    first = tp.randn(10).tolist()
    tp.set_rng_state(state)
    assert tp.randn(10).tolist() == first, "set_rng_state replays from a saved state"
    # A state saved by PyTorch loads here, and the other way round.
    tp.set_rng_state(tp.tensor(torch.get_rng_state().numpy()))
    _same(tp.rand(6), torch.rand(6))
    torch.set_rng_state(torch.from_numpy(tp.get_rng_state().numpy()))
    _same(tp.randn(18), torch.randn(18))
    g = tp.Generator().manual_seed(1)
    g.set_state(tp.get_rng_state())
    _same(tp.randn(5, generator=g), tp.randn(5))


def test_set_state_rejects_a_wrong_state():
    with pytest.raises(ValueError, match="5056"):
        tp.set_rng_state(tp.zeros(10, dtype=tp.uint8))
    with pytest.raises(ValueError, match="not a valid mt19937 state"):
        tp.set_rng_state(tp.zeros(5056, dtype=tp.uint8))


@pytest.mark.parametrize("seed", [0, 5489, 2 ** 32 - 1])
def test_the_compiled_twister_gives_numpys_words(seed):
    """cpu_kernels/_mt19937.py against NumPy's MT19937 (the same recurrence) from the same
    state: draws of every length around a twist (623, 624, 625 words, several twists in
    one call, none), from a fresh state and mid-way, and 64-bit pairs high word first."""
    from cpu_kernels._mt19937 import high_low_pairs, twister_words
    from tensorplay._random import init_genrand
    key = init_genrand(seed)
    reference = np.random.MT19937(0)
    reference.state = {"bit_generator": "MT19937", "state": {"key": key.copy(), "pos": 624}}
    pos = 624
    for n in (0, 1, 623, 1, 624, 625, 5000, 3, 1248):
        words = np.empty(n, np.uint64)
        pos = twister_words(key, pos, words)
        np.testing.assert_array_equal(words, reference.random_raw(n))
        assert pos == reference.state["state"]["pos"]
        np.testing.assert_array_equal(key, reference.state["state"]["key"])
    words = np.empty(10, np.uint64)
    twister_words(key, pos, words)
    pairs = np.empty(5, np.uint64)
    high_low_pairs(words, pairs)
    raw = reference.random_raw(10)
    np.testing.assert_array_equal(pairs, (raw[0::2] << np.uint64(32)) | raw[1::2])


def test_threads_drawing_from_one_generator_share_its_words():
    """The compiled twister releases the GIL; threads drawing from one generator at once
    must still get each word once (the words of a sequential run, in some order)."""
    import threading
    from tensorplay._random import draw_seed
    shared = tp.Generator().manual_seed(11)
    drawn = []

    def draw():
        for _ in range(300):
            drawn.append(draw_seed(shared))
    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    alone = tp.Generator().manual_seed(11)
    assert sorted(drawn) == sorted(draw_seed(alone) for _ in range(1200))


def test_seeds_as_torch_takes_them():
    tp.manual_seed(-1)
    torch.manual_seed(-1)
    assert tp.initial_seed() == torch.initial_seed() == 2 ** 64 - 1
    _same(tp.rand(3), torch.rand(3))
    with pytest.raises(ValueError, match="range"):
        tp.manual_seed(2 ** 64)
    s = tp.seed()
    assert tp.initial_seed() == s and 0 <= s < 2 ** 64
    torch.manual_seed(s)
    _same(tp.rand(4), torch.rand(4))
    assert tp.Generator().seed() != tp.Generator().seed()


def test_same_seed_same_numbers():
    outs = []
    for _ in range(2):
        tp.manual_seed(123)
        outs.append([tp.randn(40).tolist(), tp.rand(3).tolist(), tp.randperm(10).tolist(),
                     tp.multinomial(tp.ones(6), 6).tolist()])
    assert outs[0] == outs[1]


# ---- what the library builds on them ---------------------------------------------------------
@pytest.mark.parametrize("make", ["Linear(5, 7)", "Conv2d(3, 4, 3)", "LSTM(4, 6)", "GRU(3, 5)",
                                  "Embedding(10, 3)", "MultiheadAttention(8, 2)"])
def test_module_initialisation_matches_torch(make):
    _seed(0)
    ours, theirs = eval("tp.nn." + make), eval("torch.nn." + make)
    pairs = list(zip(ours.parameters(), theirs.parameters()))
    assert len(pairs) == len(list(theirs.parameters()))
    for a, b in pairs:
        _same(a, b)
    _in_step()


def test_data_shuffling_matches_torch():
    from torch.utils import data as tdata
    from tensorplay.utils import data as pdata
    _seed(3)
    x = np.arange(50, dtype=np.float32)
    for _ in range(2):      # two epochs: a fresh sampler seed each
        ours = [b[0].tolist() for b in pdata.DataLoader(pdata.TensorDataset(tp.tensor(x)),
                                                        batch_size=8, shuffle=True)]
        theirs = [b[0].tolist() for b in tdata.DataLoader(tdata.TensorDataset(torch.tensor(x)),
                                                          batch_size=8, shuffle=True)]
        assert ours == theirs
    assert [s.indices for s in pdata.random_split(range(10), [3, 7])] == \
        [list(s.indices) for s in tdata.random_split(range(10), [3, 7])]
    assert list(pdata.WeightedRandomSampler([0.1, 0.5, 0.4, 0.0], 12)) == \
        list(tdata.WeightedRandomSampler([0.1, 0.5, 0.4, 0.0], 12))
    assert list(pdata.RandomSampler(range(7), replacement=True, num_samples=40)) == \
        list(tdata.RandomSampler(range(7), replacement=True, num_samples=40))
    _in_step()


def test_fused_multiply_add_emulations_round_once():
    """_fma32/_fma64 equal the exactly rounded a * b + c, ties included."""
    from fractions import Fraction
    from tensorplay._random_draws import _fma32, _fma64

    def exact32(a, b, c):
        v = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        f = np.float32(float(v))
        near = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        return min(near, key=lambda x: (abs(Fraction(float(x)) - v),
                                        int(np.array(x).view(np.int32)) & 1))

    rng = np.random.default_rng(0)
    a = rng.standard_normal(2000).astype(np.float32)
    b = rng.standard_normal(2000).astype(np.float32)
    c = (rng.standard_normal(2000) * np.exp2(rng.integers(-40, 5, 2000))).astype(np.float32)
    got = _fma32(a, b, c)
    assert all(got[i] == exact32(a[i], b[i], c[i]) for i in range(2000))
    tie = np.array([1 + 2 ** -12], np.float32)   # tie * tie is halfway between floats
    for cc in (2.0 ** -60, -2.0 ** -60, 0.0):
        assert _fma32(tie, tie, np.float32(cc))[0] == exact32(tie[0], tie[0], np.float32(cc))
    x = rng.standard_normal(2000)
    for b64, c64 in [(3.7, -2.3), (1e-3, 5.0)]:
        want = [float(Fraction(v) * Fraction(b64) + Fraction(c64)) for v in x.tolist()]
        assert _fma64(x, b64, c64).tolist() == want
    one_ulp = np.array([1 + 2 ** -52])
    assert _fma64(one_ulp, 1 + 2 ** -52, 2.0 ** -200)[0] == float(
        Fraction(1 + 2 ** -52) ** 2 + Fraction(2.0 ** -200))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_muller_loops_compiled_give_the_bits_of_their_python_form(dtype):
    """The normal fill's blocks (cpu_kernels/_box_muller.py) compiled, with the machine's
    fused multiply-add and bitcasts (cpu_kernels/_loops.py's primitives), against the
    same loops run as Python (tensorplay/_fma.py's exact fma, NumPy's views): the same
    bits, at the ends of [0, 1) (u1 = 1 and the smallest u1, log of the smallest
    normal) and over every octant of the sine's reduction."""
    from cpu_kernels._box_muller import box_muller_double, box_muller_float
    loop = box_muller_float if dtype == np.float32 else box_muller_double
    ends = np.array([0, 2.0 ** -24, 0.5, 1 - 2.0 ** -24, 1 - 2.0 ** -53], dtype)
    d = np.concatenate([np.random.default_rng(0).random(60 * 16).astype(dtype),
                        np.resize(ends, 4 * 16)]).reshape(-1, 16)
    d[-4:, 8:] = np.linspace(0, 1, 4 * 8, endpoint=False).reshape(4, 8)
    mean, std = dtype(-1.5), dtype(3.25)
    compiled, python = np.empty_like(d), np.empty_like(d)
    loop(d, mean, std, compiled)
    loop.python(d, mean, std, python)
    np.testing.assert_array_equal(compiled.view(f"u{d.itemsize}"),
                                  python.view(f"u{d.itemsize}"))
