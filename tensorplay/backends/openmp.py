"""`tp.backends.openmp`: PyTorch parallelises its CPU loops with OpenMP. The CPU kernels
here are NumPy expressions (threads only inside its BLAS), so OpenMP is not used."""


def is_available():
    return False
