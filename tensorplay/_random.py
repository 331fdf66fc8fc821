"""Random number generators: `tp.Generator`, `tp.manual_seed`, `tp.get_rng_state`.

A CPU Generator is PyTorch's CPU generator, reproduced: a 32-bit Mersenne Twister
(mt19937) seeded with `init_genrand(seed & 0xffffffff)`, as `at::mt19937` seeds it, so
`tp.manual_seed(s)` followed by the same random calls gives PyTorch's numbers.

    random()    one 32-bit word of the twister
    random64()  two words, the first one the high half: (w0 << 32) | w1
    next double normal sample: the sine half of the last Box-Muller pair, kept for the
                next scalar normal draw (PyTorch's `next_double_normal_sample`)

The twister runs as compiled loops over the generator's own state, 624 words and the
index of the next one (cpu_kernels/_mt19937.py: a compiled loop like the CPU kernels',
made with their `@loop`, which is why this Tensor-layer module imports from the backend's
package; NumPy's `np.random.MT19937` has the same recurrence, and gives the same words, at
8x the time), so a draw of n words is one call. How each random op turns words into
samples lives in tensorplay/_random_draws.py.

`get_state()` returns PyTorch's byte layout (a uint8 tensor of 5056 bytes:
THGeneratorState followed by the float normal cache), so a state saved by
`torch.get_rng_state()` can be loaded here and the other way round.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from cpu_kernels._mt19937 import high_low_pairs, twister_words
from tensorplay import _capture_hooks, _cuda_state
from tensorplay import _tensor_factory as factory

_N = 624                      # words of mt19937 state
# Held while a generator's twister runs: the compiled loop releases the GIL, and two threads
# drawing from one generator must not read and twist its state words at once (the draws
# hold _random_draws' lock too, but draw_seed and other direct callers of random() do not).
_twister_lock = threading.Lock()
_STATE_BYTES = 5056           # sizeof(THGeneratorStateNew)
_DEFAULT_SEED = 67280421310721

# PyTorch's THGeneratorStateNew, field by field (offsets of the C struct on x86-64).
_STATE_DTYPE = np.dtype({
    "names": ["the_initial_seed", "left", "seeded", "next", "state", "normal_x",
              "normal_y", "normal_rho", "normal_is_valid", "next_float_normal_sample",
              "is_next_float_normal_sample_valid"],
    "formats": ["<u8", "<i4", "<i4", "<u8", ("<u8", _N), "<f8", "<f8", "<f8", "<i4",
                "<f4", "u1"],
    "offsets": [0, 8, 12, 16, 24, 5016, 5024, 5032, 5040, 5048, 5052],
    "itemsize": _STATE_BYTES,
})


def init_genrand(seed):
    """The 624 state words mt19937 starts from for a 32-bit seed (Matsumoto-Nishimura)."""
    key = np.empty(_N, np.uint32)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        key[j] = x
    return key


def _wrap_seed(seed):
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise ValueError(f"manual_seed(): seed must be within the range "
                         f"[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff], but got {seed}")
    return seed % (2 ** 64)


class Generator:
    """A source of random numbers for the random ops (`generator=` argument)."""

    def __init__(self, device="cpu"):
        self.device = device
        self.manual_seed(_DEFAULT_SEED)

    # ---- seeding -----------------------------------------------------------------
    def manual_seed(self, seed):
        self._seed = _wrap_seed(seed)
        key = init_genrand(self._seed)
        with _twister_lock:
            self._key = key                     # the twister's state words
            self._pos = _N                      # the next word's index (_N: twist first)
        self._next_after_seed = 0       # PyTorch's `next_` before the first draw
        self.next_double_normal = None
        self.next_float_normal = None
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the seed used."""
        self.manual_seed(int.from_bytes(os.urandom(8), "little"))
        return self._seed

    def initial_seed(self):
        return self._seed

    # ---- raw words ------------------------------------------------------------------
    def random(self, n):
        """n 32-bit words, as uint64 (room for the arithmetic the transforms do)."""
        if n:
            self._next_after_seed = _N
        words = np.empty(n, np.uint64)
        with _twister_lock:
            self._pos = twister_words(self._key, self._pos, words)
        return words

    def random64(self, n):
        """n 64-bit words, each made of two 32-bit words (high word first)."""
        out = np.empty(n, np.uint64)
        high_low_pairs(self.random(2 * n), out)
        return out

    # ---- state ---------------------------------------------------------------------
    def get_state(self):
        """PyTorch's byte layout of the CPU generator state, as a uint8 tensor."""
        from tensorplay import _dtype as dt
        return factory.tensor(self._state_bytes(), dtype=dt.uint8)

    def _state_bytes(self):
        with _twister_lock:          # not a state another thread is halfway through
            pos, key = self._pos, self._key.copy()
        rec = np.zeros((), _STATE_DTYPE)
        rec["the_initial_seed"] = self._seed
        rec["seeded"] = 1
        # NumPy's `pos` is the index of the next word; PyTorch counts `left` down to a
        # twist and `next` up: after k words since a twist, left = 625 - k, next = k.
        rec["left"] = 1 if pos == _N else _N + 1 - pos
        rec["next"] = self._next_after_seed if pos == _N else pos
        rec["state"] = key
        if self.next_double_normal is not None:
            rec["normal_is_valid"] = 1
            rec["normal_y"] = self.next_double_normal
        if self.next_float_normal is not None:
            rec["is_next_float_normal_sample_valid"] = 1
            rec["next_float_normal_sample"] = self.next_float_normal
        return np.frombuffer(rec.tobytes(), np.uint8).copy()

    def set_state(self, new_state):
        """Load a state from `get_state()` (or from `torch.get_rng_state()`)."""
        raw = np.ascontiguousarray(_as_numpy(new_state)).reshape(-1)
        if raw.dtype != np.uint8 or raw.size != _STATE_BYTES:
            raise ValueError(f"set_state(): expected a uint8 tensor of {_STATE_BYTES} bytes "
                             f"(from get_state()), but got {raw.dtype} with {raw.size} "
                             f"elements")
        rec = np.frombuffer(raw.tobytes(), _STATE_DTYPE)[0]
        left, nxt = int(rec["left"]), int(rec["next"])
        if not (rec["seeded"] and 0 < left <= _N and nxt <= _N
                and (left == 1 or left + nxt == _N + 1)):
            raise ValueError(f"set_state(): the state is not a valid mt19937 state "
                             f"(left={left}, next={nxt})")
        self._seed = int(rec["the_initial_seed"])
        with _twister_lock:
            self._key = rec["state"].astype(np.uint32)
            self._pos = _N if left == 1 else nxt
        self._next_after_seed = nxt
        self.next_double_normal = float(rec["normal_y"]) if rec["normal_is_valid"] else None
        self.next_float_normal = (np.float32(rec["next_float_normal_sample"])
                                  if rec["is_next_float_normal_sample_valid"] else None)
        return self

    def __repr__(self):
        return f"<tensorplay.Generator device={self.device!r} initial_seed={self._seed}>"


def _as_numpy(state):
    if isinstance(state, np.ndarray):
        return state
    if hasattr(state, "_impl"):
        return state.detach().cpu().numpy()
    return np.asarray(state)


default_generator = Generator()


def get(generator):
    """The generator a random op draws from: the one given, else the default one. A
    running graph capture hears of the draw (tensorplay/_capture_hooks.py): a creation
    function is not dispatched, so its numbers would otherwise be frozen in the graph."""
    if _capture_hooks.observer is not None:
        _capture_hooks.random_draw("a random creation function")
    return default_generator if generator is None else generator


def manual_seed(seed):
    """Seed the default generator and the `cuda` one (tensorplay/_cuda_state.py)."""
    default_generator.manual_seed(seed)
    _cuda_state.manual_seed(seed)
    return default_generator


def seed():
    """Seed the default generator from the operating system's entropy, and the `cuda`
    one with the same seed; returns the seed."""
    s = default_generator.seed()
    _cuda_state.manual_seed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def get_cuda_rng_state(device="cuda"):
    """The `cuda` generator's state (`tp.cuda.get_rng_state`): PyTorch's layout for its
    Philox generator, 16 bytes, the seed then the offset (two little-endian int64), as
    a uint8 tensor on the CPU."""
    from tensorplay import _dtype as dt
    seed, offset = _cuda_state.philox_state()
    raw = np.array([seed, offset], "<i8").view(np.uint8)
    return factory.tensor(raw, dtype=dt.uint8)


def set_cuda_rng_state(new_state, device="cuda"):
    """Load a state from `get_cuda_rng_state()`: the next cuda draws repeat the ones that
    followed it."""
    raw = np.ascontiguousarray(_as_numpy(new_state)).reshape(-1)
    if raw.dtype != np.uint8 or raw.size != 16:
        raise ValueError(f"set_rng_state(): expected a uint8 tensor of 16 bytes (from "
                         f"tp.cuda.get_rng_state()), but got {raw.dtype} with {raw.size} "
                         f"elements")
    seed, offset = (int(v) for v in raw.view("<i8"))
    _cuda_state.set_philox_state(seed, offset)


def draw_seed(generator=None):
    """A 63-bit seed drawn from `generator` (or the default one): PyTorch's
    `torch.empty((), dtype=torch.int64).random_(generator=...)`, which its DataLoader
    and RandomSampler use to seed workers and fresh generators."""
    return int(get(generator).random64(1)[0] & np.uint64(2 ** 63 - 1))


def philox_inputs(generator, count):
    """(seed, offset) for a `cuda` kernel drawing `count` Philox numbers
    (`tp.cuda.philox_inputs`): with an explicit tp.Generator, a seed drawn from its (CPU,
    mt19937) stream and offset 0; otherwise the cuda generator's seed and offset
    (`_cuda_state.philox_seed_offset`)."""
    if generator is not None:
        return draw_seed(generator) % (2 ** 31 - 1), 0
    return _cuda_state.philox_seed_offset(count)


# ---- random creation under vmap ----------------------------------------------------------
# rand, randn, ... take no tensor, so vmap's batching kernel never sees them: they ask vmap
# how to draw instead. `vmaps_running` counts the vmap calls running on any thread, so that
# outside vmap the question costs one read; tensorplay/func/random_under_vmap.py sets it and
# the two functions.
vmaps_running = 0
vmap_batch_sizes = None     # op name -> batch sizes to draw in front (raises in "error" mode)
vmap_wrap = None            # the draw, batch dims in front -> what the vmapped function sees
