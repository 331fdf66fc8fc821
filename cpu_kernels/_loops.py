"""Compiled loops: the few CPU kernels that NumPy cannot write as one pass over memory.

A NumPy kernel is a sequence of whole-array passes: Adam's update is a dozen of them, a
batch norm backward six, each reading and writing every element once more. Where those
passes, not Python, are the cost, the kernel is written here as the loop it means, in
plain Python over NumPy arrays, and Numba compiles it to machine code the first time it
runs with given argument types (`numba.njit`). The loop is the readable form of the
kernel, and the one that runs:

    @loop
    def scale_(a, k):
        for i in range(a.size):
            a[i] = a[i] * k

Options, each for a reason:
- `error_model="numpy"`: a float division by zero gives inf / NaN as NumPy's does. (Numba's
  default, Python's ZeroDivisionError, puts a test in the loop, which stops the compiler
  from vectorizing it: Adam's step ran 2x slower.)
- no `fastmath`: every operation rounds as IEEE says, in the order written, with no fused
  multiply-add, so a loop gives the bits of the NumPy passes that spell the same
  arithmetic (tests/test_optim.py checks Adam's and SGD's bit for bit).
- `@loop(reassociate=True)`, for a loop that sums along an array: its additions may be
  reordered (fastmath's `reassoc` flag alone), so the compiler sums in vector lanes and
  adds the lanes up at the end, as BLAS and PyTorch's vectorized reductions do; a sum
  in the written order depends on each previous addition and runs one element at a
  time. The other operations still round as written. The order then follows the
  machine's vector width (one AVX-512 machine gives the bits of another, an AVX2 machine
  may differ in the last place), as with BLAS; batch norm's backward sums its planes so
  (2x faster than the products and a BLAS matrix-vector product), layer norm its rows.
- `cache=True`: the machine code is kept in `__pycache__` beside this package's files, so
  only the first process ever compiles (about 0.5 s a loop and argument types).
- Numba is imported on a loop's first call, not with the backend: `import tensorplay`
  does not pay for it. Where it is not installed (it is a dependency of the package, but
  a machine may hold an install made with --no-deps), the loops run as plain Python,
  correct and slow, with a warning the first time.

To step through a loop in a debugger, or print inside it, set NUMBA_DISABLE_JIT=1 before
the first call: the loops then run as the plain Python they are (slowly).

A loop may call a scalar helper marked `@helper` (compiled with the loops that call it,
plain Python with them otherwise), and three primitives that machine code has and Python
lacks: `fma(a, b, c)`, a * b + c rounded once (the hardware's fused multiply-add, or libm's
fma where the machine has none; tensorplay/_fma.py's exact emulation as Python), and
`float_bits(x)` / `bits_float(i)`, a float32's 32 bits as an int and back (as C's
memcpy between a float and an int32: the bit tricks of a vectorized log or sine).
"""
from __future__ import annotations

import functools
import warnings

import numpy as np


def loop(fn=None, *, reassociate=False):
    """`fn`, compiled by Numba on its first call (see the module doc for the options);
    `@loop(reassociate=True)`: a sum whose additions may be reordered into vector lanes."""
    if fn is None:
        return functools.partial(loop, reassociate=reassociate)
    compiled = None

    @functools.wraps(fn)
    def run(*args):
        nonlocal compiled
        if compiled is None:
            compiled = _compile(fn, reassociate)
        return compiled(*args)
    run.python = fn          # the plain function, for reading and for tests
    return run


def _compile(fn, reassociate=False):
    try:
        import numba
    except ImportError:
        warnings.warn(f"numba is not installed: the CPU kernel loop {fn.__qualname__} "
                      "runs as plain Python (correct, and slow); pip install numba",
                      RuntimeWarning, stacklevel=3)
        return _as_python(fn)
    if numba.config.DISABLE_JIT:
        return _as_python(fn)
    _register_helpers()
    return numba.njit(fn, cache=True, nogil=True, error_model="numpy",
                      fastmath={"reassoc"} if reassociate else False)


# ---- what a loop may call --------------------------------------------------------------
_helpers = []            # the @helper functions, registered with Numba by _compile
_registered = {"primitives": False, "helpers": 0}


def helper(fn):
    """A scalar function that loops call: plain Python as it stands, compiled into the
    loops that call it (numba.extending.register_jitable, on the first compile)."""
    _helpers.append(fn)
    return fn


def fma(a, b, c):
    """a * b + c rounded once, in a's float type."""
    from tensorplay._fma import fma32, fma64
    return (fma32 if isinstance(a, np.float32) else fma64)(a, b, c)[()]


def float_bits(x):
    """The 32 bits of float32 x, as an int in [0, 2^32)."""
    return int(np.float32(x).view(np.uint32))


def bits_float(i):
    """The float32 whose bits are the low 32 of int i."""
    return np.uint32(i & 0xFFFFFFFF).view(np.float32)


def _register_helpers():
    """Teach Numba the primitives (LLVM's fma, a bitcast) and the @helper functions:
    once, and again for helpers defined since."""
    from numba.core import types
    from numba.extending import intrinsic, overload, register_jitable
    if not _registered["primitives"]:
        from llvmlite import ir

        @intrinsic
        def _llvm_fma(typingctx, a, b, c):
            if not (isinstance(a, types.Float) and a == b == c):
                return None

            def codegen(context, builder, signature, args):
                t = context.get_value_type(a)
                f = builder.module.declare_intrinsic("llvm.fma", [t],
                                                     ir.FunctionType(t, [t, t, t]))
                return builder.call(f, args)
            return a(a, b, c), codegen

        @intrinsic
        def _to_bits(typingctx, x):
            def codegen(context, builder, signature, args):
                word = builder.bitcast(args[0], ir.IntType(32))
                return builder.zext(word, ir.IntType(64))
            return types.int64(types.float32), codegen

        @intrinsic
        def _from_bits(typingctx, i):
            def codegen(context, builder, signature, args):
                word = builder.trunc(args[0], ir.IntType(32))
                return builder.bitcast(word, ir.FloatType())
            return types.float32(types.int64), codegen

        overload(fma)(lambda a, b, c: lambda a, b, c: _llvm_fma(a, b, c))
        overload(float_bits)(lambda x: lambda x: _to_bits(x))
        overload(bits_float)(lambda i: lambda i: _from_bits(i))
        _registered["primitives"] = True
    for fn in _helpers[_registered["helpers"]:]:
        register_jitable(fn)
    _registered["helpers"] = len(_helpers)


def _as_python(fn):
    """fn run as Python: its NumPy scalars warn of what the compiled loop does silently
    (inf - inf, a division by zero), so it runs with NumPy's warnings off, as compiled."""
    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    return run
