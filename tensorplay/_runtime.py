"""Process-wide switches a PyTorch script sets at its top: how many threads the CPU
kernels use, and whether only deterministic algorithms may run.

Threads: the CPU kernels are NumPy expressions, so their parallelism is the BLAS library
NumPy links (OpenBLAS, MKL) behind matmul, conv and linear algebra; elementwise NumPy is
single-threaded. `set_num_threads(n)` limits that BLAS pool through threadpoolctl, for
the rest of the process, as `torch.set_num_threads` limits PyTorch's intra-op pool.

Determinism: every CPU kernel here is deterministic (NumPy, no atomics). On a GPU the
Triton kernels that accumulate with atomic adds (index_add / scatter_add, embedding and
pooling backward, ...) may sum in a different order from run to run. The flag is recorded
and reported, as PyTorch records it; it does not yet make those kernels raise (PyTorch's
error for a nondeterministic op) or switch them to another algorithm.
"""
from __future__ import annotations

_num_threads = None          # what set_num_threads asked for, None before any call
_limiter = None              # threadpoolctl's handle on the limit it applied
_deterministic = False
_deterministic_warn_only = False


def _blas_pools():
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then finds)
    from threadpoolctl import threadpool_info
    return [pool for pool in threadpool_info() if pool["user_api"] == "blas"]


def set_num_threads(num_threads):
    """Limit the BLAS threads of the CPU kernels to `num_threads` (a positive int)."""
    global _num_threads, _limiter
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, but got "
                           f"{num_threads!r}")
    from threadpoolctl import threadpool_limits
    _limiter = threadpool_limits(limits=num_threads, user_api="blas")
    _num_threads = num_threads


def get_num_threads():
    """The BLAS threads the CPU kernels use: the largest pool NumPy's BLAS reports, or
    the last `set_num_threads` value (the core count before any) when it reports none."""
    pools = _blas_pools()
    if pools:
        return max(pool["num_threads"] for pool in pools)
    if _num_threads is not None:
        return _num_threads
    import os
    return os.cpu_count() or 1


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record that only deterministic algorithms should run (see the module docstring for
    what that changes here)."""
    global _deterministic, _deterministic_warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, "
                        f"not {type(mode).__name__}")
    _deterministic = mode
    _deterministic_warn_only = bool(warn_only) and mode


def are_deterministic_algorithms_enabled():
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic_warn_only
