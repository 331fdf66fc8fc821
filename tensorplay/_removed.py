"""Functions PyTorch removed (deprecated in 1.9) but still names: calling one raises
PyTorch's RuntimeError, which says what replaced it. A program ported from an old
PyTorch gets the same guidance here."""
from __future__ import annotations

_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
             "`torch.linalg.solve` has its arguments reversed and does not return the LU "
             "factorization.",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` "
           "rather than real tensors mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of "
              "the matrix by default to using the lower triangular portion: use "
              "`torch.linalg.eigh` (or `torch.linalg.eigvalsh` for the eigenvalues only).",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`. "
             "`torch.linalg.lstsq` has reversed arguments and does not return the QR "
             "decomposition in the returned tuple.",
    "matrix_rank": "Please use the `torch.linalg.matrix_rank` function instead. The "
                   "parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to "
                   "'hermitian'.",
}


def _removed(name):
    def removed(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now "
                           f"removed. {_REMOVED[name]}")
    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"Removed from PyTorch (1.9): raises, naming what replaced it."
    return removed


FUNCTIONS = {name: _removed(name) for name in _REMOVED}
# (torch.matrix_rank has no method form)
METHODS = {name: f for name, f in FUNCTIONS.items() if name != "matrix_rank"}
