"""`tp.backends.mkl`: whether Intel MKL does the dense linear algebra, as PyTorch's. Here
that is NumPy's BLAS/LAPACK, so the answer is whether NumPy was built against MKL."""

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    import numpy as np
    try:
        config = np.show_config(mode="dicts")
    except TypeError:          # NumPy < 1.26 has no dict form
        return False
    blas = config.get("Build Dependencies", {}).get("blas", {})
    return "mkl" in str(blas.get("name", "")).lower()


class verbose:
    """`with tp.backends.mkl.verbose(level):` MKL's logging; NumPy does not expose it."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
