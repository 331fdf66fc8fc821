"""The reductions, sorts and searches PyTorch refuses for complex tensors, with PyTorch's
own words for each.

Complex numbers have no order: there is no largest one, no sorted list, no median. NumPy
orders them anyway (lexicographically, by real part then imaginary part), so its max,
sort and searchsorted would answer without complaint; PyTorch refuses, and so do we,
before NumPy is called. Each op's shape rule (tensorplay/meta/) and its kernel call
`reject_complex`, so a meta tensor is refused as a CPU one is.

The message is PyTorch's, after the op's name (unless PyTorch's starts with it) and
before the argument TensorPlay blames:

    max(): "max_all" not implemented for 'ComplexFloat' (argument 'self' is complex64)
    argmax(): does not support complex input (argument 'self' is complex64)

(`ComplexFloat` / `ComplexDouble`: PyTorch's C++ names of complex64 / complex128, which
its messages use.) nansum is refused too, though a sum of complex numbers that skips
NaNs would make sense: PyTorch's CPU kernel has no complex form.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError

# PyTorch's C++ name of each complex dtype, as its "not implemented for" messages print it.
TORCH_NAMES = {dt.complex64: "ComplexFloat", dt.complex128: "ComplexDouble"}


def _not_implemented(kernel):
    """PyTorch's message when its dtype switch has no complex case for `kernel`."""
    return '"' + kernel + "\" not implemented for '{T}'"


_SORT = " Sort does not support complex dtypes on CPU"

# Keyed by overload where overloads differ (max() and max(dim) run different PyTorch
# kernels, so their messages differ); `{T}` is the dtype's PyTorch name.
REFUSALS = {
    "max": _not_implemented("max_all"),
    "min": _not_implemented("min_all"),
    "max.dim": "max(): does not support complex input",
    "min.dim": "min(): does not support complex input",
    "amax": _not_implemented("max_values_cpu"),
    "amin": _not_implemented("min_values_cpu"),
    "aminmax": _not_implemented("aminmax_cpu"),
    "argmax": "argmax(): does not support complex input",
    "argmin": "argmin(): does not support complex input",
    "sort": _SORT,
    "argsort": _SORT,
    "msort": _SORT,
    "topk": " topk does not support complex dtypes on CPU",
    "median": _not_implemented("median_cpu"),
    "nanmedian": _not_implemented("median_cpu"),
    "median.dim": _not_implemented("median_out"),
    "nanmedian.dim": _not_implemented("median_out"),
    "kthvalue": _not_implemented("kthvalue_cpu"),
    "mode": _not_implemented("mode_cpu"),
    "cummax": _not_implemented("cummax_cpu"),
    "cummin": _not_implemented("cummin_cpu"),
    "nansum": "nansum on CPU does not support complex inputs",
    "nanmean": "nansum on CPU does not support complex inputs",
    "unique": _not_implemented("unique"),
    "unique_consecutive": _not_implemented("unique"),
    "unique_dim": _not_implemented("unique_dim"),
    "searchsorted": _not_implemented("searchsorted_out_cpu"),
    "bucketize": _not_implemented("searchsorted_out_cpu"),
    "bincount": _not_implemented("bincount_cpu"),
    "isin": "Unsupported input type encountered for isin(): {T}",
    "scatter_reduce.amax": _not_implemented("scatter_gather_tensor_cpu_reduce_amax"),
    "scatter_reduce.amin": _not_implemented("scatter_gather_tensor_cpu_reduce_amin"),
    "index_reduce.amax": _not_implemented("maximum_cpu"),
    "index_reduce.amin": _not_implemented("minimum_cpu"),
}


def reject_complex(op, t, refusal=None, arg="self"):
    """Raise PyTorch's refusal of op `op` for a complex tensor `t` (argument `arg`);
    `refusal` names the REFUSALS entry when it is not `op` (an overload, a mode)."""
    d = t._impl.dtype
    if d.is_complex:
        text = REFUSALS[refusal or op].format(T=TORCH_NAMES[d]).strip()
        if not text.startswith(f"{op}(): "):
            text = f"{op}(): {text}"
        raise DTypeError(f"{text} (argument '{arg}' is {d.name})", op=op, arg=arg)
