"""Random number generators: `tp.Generator`, `tp.manual_seed`.

A Generator wraps NumPy's PCG64 bit generator; every random op takes an
optional `generator=` and otherwise uses the default one, so a run is
reproducible after `tp.manual_seed(n)`.
"""
from __future__ import annotations

import numpy as np


class Generator:
    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        self.manual_seed(int(np.random.SeedSequence().entropy) % (2 ** 63))
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self

    @property
    def numpy(self):
        """The NumPy generator that the CPU kernels draw from."""
        return self._rng


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and the CUDA one, when the Triton backend is loaded)."""
    default_generator.manual_seed(seed)
    import sys
    cuda = sys.modules.get("tensorplay.cuda")
    if cuda is not None:
        cuda.manual_seed(seed)
    return default_generator


def initial_seed():
    return default_generator.initial_seed()


def rng(generator):
    return (generator or default_generator).numpy
