"""The Mersenne Twister (mt19937) that a CPU tp.Generator draws its words from, as compiled
loops (cpu_kernels/_loops.py) over the generator's own state: 624 words `key` and the
index `pos` of the next one (624: the words are used up, twist first), NumPy's
MT19937.state layout and PyTorch's `at::mt19937` recurrence (Matsumoto and Nishimura).

    twist:   key[k] = key[k + 397] ^ (y >> 1) ^ (0x9908b0df if y is odd else 0),
             y = the top bit of key[k] with the low 31 bits of key[k + 1] (indices mod 624)
    temper:  y = key[pos]; y ^= y >> 11; y ^= (y << 7) & 0x9d2c5680;
             y ^= (y << 15) & 0xefc60000; y ^= y >> 18

NumPy's MT19937.random_raw gives the same words, one call through a function pointer per
word: 92 us for the 32,768 words of a dropout mask over 32 x 512 values, where these
loops take 12 (the twist in three runs without a modulo, the tempering over each run of
state words in one vectorised loop). tests/test_random_torch.py checks the words against
NumPy's across twists, and the draws against PyTorch's.
"""
from __future__ import annotations

import numpy as np

from cpu_kernels._loops import loop

N = 624          # state words
M = 397          # the twist's middle distance


@loop
def twister_words(key, pos, out):
    """Fill `out` (uint64) with the next out.size 32-bit words of the twister whose state
    is (key, pos), twisting key in place as it is used up; returns the new pos."""
    upper, lower, matrix = np.uint32(0x80000000), np.uint32(0x7fffffff), np.uint32(0x9908b0df)
    one = np.uint32(1)
    n = out.size
    done = 0
    while done < n:
        if pos >= N:
            for k in range(N - M):
                a = (key[k] & upper) | (key[k + 1] & lower)
                key[k] = key[k + M] ^ (a >> one) ^ ((a & one) * matrix)
            for k in range(N - M, N - 1):
                a = (key[k] & upper) | (key[k + 1] & lower)
                key[k] = key[k + M - N] ^ (a >> one) ^ ((a & one) * matrix)
            a = (key[N - 1] & upper) | (key[0] & lower)
            key[N - 1] = key[M - 1] ^ (a >> one) ^ ((a & one) * matrix)
            pos = 0
        take = min(N - pos, n - done)
        words = key[pos:pos + take]      # (views: the loop below then vectorises)
        dest = out[done:done + take]
        for t in range(take):
            y = words[t]
            y ^= y >> np.uint32(11)
            y ^= (y << np.uint32(7)) & np.uint32(0x9d2c5680)
            y ^= (y << np.uint32(15)) & np.uint32(0xefc60000)
            y ^= y >> np.uint32(18)
            dest[t] = np.uint64(y)
        pos += take
        done += take
    return pos


@loop
def high_low_pairs(words, out):
    """out[i] = (words[2i] << 32) | words[2i + 1]: PyTorch's 64-bit draw, high word first."""
    for i in range(out.size):
        out[i] = (words[2 * i] << np.uint64(32)) | words[2 * i + 1]


@loop
def unit_doubles(words, out):
    """out[i] = (((words[2i] << 32) | words[2i + 1]) & (2^53 - 1)) * 2^-53: PyTorch's double
    uniform in [0, 1), the low 53 bits of a 64-bit draw (high word first) scaled, exactly
    (an integer below 2^53 converts to double as it is; the scale is a power of 2). One
    pass where NumPy's was four (the pairs, the mask, the conversion, the scale)."""
    mask = np.uint64((1 << 53) - 1)
    for i in range(out.size):
        out[i] = np.float64(((words[2 * i] << np.uint64(32)) | words[2 * i + 1]) & mask) \
            * 1.1102230246251565e-16
