"""The ops PyTorch refuses for complex tensors, each with PyTorch's own message.

Complex numbers have no order (no `<`, max, clamp, relu, floor, sign...) and many real
functions have no complex kernel in PyTorch (erf, atan2, fmod...). TensorPlay refuses
the same ops, with a DTypeError that names the op and the argument and quotes PyTorch's
message, so that code written against one behaves the same on the other:

    >>> tp.lt(z, z)
    DTypeError: lt(): "lt_cpu" not implemented for 'ComplexFloat' (argument 'self' is
    complex64: complex numbers are not ordered)

Kernels call `reject_complex` before computing (NumPy would happily compare complex
numbers lexicographically, or floor their parts); the shape rules of tensorplay/meta call
it too, so a meta tensor is refused alike.
"""
from __future__ import annotations

from tensorplay._promotion import result_type
from tensorplay.errors import DTypeError

# PyTorch's name of each complex dtype in its messages (its ScalarType).
TORCH_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _no_kernel(kernel):
    """PyTorch's AT_DISPATCH message: its kernel has no complex case."""
    return f'"{kernel}" not implemented for ' + "'{torch_dtype}'"


_UNORDERED = "complex numbers are not ordered"

# op name (the out-of-place one: `floor_` looks up `floor`) -> (PyTorch's message, why).
# The messages are PyTorch's (torch 2.x, CPU), `{torch_dtype}` its dtype name.
MESSAGES = {
    # comparisons and everything built on an order
    **{op: (_no_kernel(f"{op}_cpu"), _UNORDERED) for op in ("lt", "le", "gt", "ge")},
    **{op: (f"{op} not implemented for complex tensors.", _UNORDERED)
       for op in ("maximum", "minimum", "fmax", "fmin")},
    **{op: ("clamp is not supported for complex types", _UNORDERED)
       for op in ("clamp", "clamp_min", "clamp_max", "relu", "hardtanh", "relu6")},
    "sign": ("Unlike NumPy, torch.sign is not intended to support complex numbers. "
             "Please use torch.sgn instead.", "sgn(z) = z / |z| is the complex sign"),
    "signbit": ("signbit is not implemented for complex tensors.", _UNORDERED),
    "heaviside": ("heaviside is not yet implemented for complex tensors.", _UNORDERED),
    "isposinf": ("isposinf does not support complex inputs.", _UNORDERED),
    "isneginf": ("isneginf does not support complex inputs.", _UNORDERED),
    # rounding
    **{op: (f"{op} is not supported for complex inputs", "rounding is real")
       for op in ("floor", "ceil", "trunc", "fix")},
    "round": (_no_kernel("round_vml_cpu"), "rounding is real"),
    "round_decimals": (_no_kernel("round_cpu"), "rounding is real"),
    "frac": (_no_kernel("frac_cpu"), "rounding is real"),
    # the division family
    "fmod": (_no_kernel("fmod_cpu"), "a remainder needs rounding"),
    "remainder": (_no_kernel("remainder_cpu"), "a remainder needs rounding"),
    "floor_divide": (_no_kernel("div_floor_cpu"), "rounding is real"),
    "div_floor": (_no_kernel("div_floor_cpu"), "rounding is real"),
    "div_trunc": (_no_kernel("div_trunc_cpu"), "rounding is real"),
    # real functions with no complex kernel in PyTorch
    **{op: (_no_kernel(kernel), "a real function") for op, kernel in (
        ("erf", "erf_vml_cpu"), ("erfc", "erfc_vml_cpu"), ("erfinv", "erfinv_vml_cpu"),
        ("atan2", "atan2_cpu"), ("hypot", "hypot_cpu"), ("copysign", "copysign_cpu"),
        ("xlogy", "xlogy_cpu"), ("xlog1py", "xlog1py_cpu"), ("logit", "logit_cpu"),
        ("nextafter", "nextafter_cpu"), ("lgamma", "lgamma_vml_cpu"),
        ("digamma", "digamma"), ("i0", "i0_vml_cpu"), ("logaddexp2", "logaddexp2_cpu"),
        ("gcd", "gcd_cpu"), ("lcm", "lcm_cpu"),
        ("leaky_relu", "leaky_relu_cpu"), ("elu", "elu_cpu"), ("selu", "elu_cpu"),
        ("celu", "elu_cpu"), ("gelu", "GeluKernelImpl"),
        ("softplus", "softplus_cpu"), ("mish", "mish_cpu"), ("hardsigmoid", "hardsigmoid_cpu"),
        ("hardswish", "hardswish_cpu"), ("hardshrink", "hardshrink_cpu"),
        ("softshrink", "softshrink_check"), ("threshold", "threshold_cpu"),
        ("log_sigmoid", "log_sigmoid_cpu"),
        # tp.special's functions of one real variable
        ("special_i0e", "i0e_cpu"), ("special_i1", "i1_cpu"), ("special_i1e", "i1e_cpu"),
        ("special_entr", "entr_cpu"), ("special_erfcx", "erfcx_cpu"),
        ("special_ndtri", "ndtri_cpu"), ("special_log_ndtr", "log_ndtr_cpu"),
        ("polygamma", "polygamma"), ("trigamma", "trigamma"))},
    "deg2rad": ("deg2rad is not supported for complex tensors.", "a real function"),
    "rad2deg": ("rad2deg is not supported for complex tensors.", "a real function"),
    # in place, where the out-of-place op takes complex: abs(z) is real, it cannot be
    # written back into z's complex memory
    "abs_": ("In-place abs is not supported for complex tensors.",
             "abs of a complex tensor is a real tensor"),
    # reductions, sorts and searches: each needs an order. Where one op's overloads run
    # different PyTorch kernels (max() and max(dim)), the entries are kinds (`max.all`,
    # `max.dim`) that the op's rule and kernel name; an op listed by its own name is
    # also refused, for every tensor argument, in front of its meta rule.
    "max.all": (_no_kernel("max_all"), _UNORDERED),
    "min.all": (_no_kernel("min_all"), _UNORDERED),
    "max.dim": ("does not support complex input", _UNORDERED),
    "min.dim": ("does not support complex input", _UNORDERED),
    "amax": (_no_kernel("max_values_cpu"), _UNORDERED),
    "amin": (_no_kernel("min_values_cpu"), _UNORDERED),
    "aminmax": (_no_kernel("aminmax_cpu"), _UNORDERED),
    "argmax": ("does not support complex input", _UNORDERED),
    "argmin": ("does not support complex input", _UNORDERED),
    **{op: ("Sort does not support complex dtypes on CPU", _UNORDERED)
       for op in ("sort", "argsort", "msort")},
    "topk": ("topk does not support complex dtypes on CPU", _UNORDERED),
    "median.all": (_no_kernel("median_cpu"), _UNORDERED),     # median and nanmedian
    "median.dim": (_no_kernel("median_out"), _UNORDERED),
    "kthvalue": (_no_kernel("kthvalue_cpu"), _UNORDERED),
    "mode": (_no_kernel("mode_cpu"), _UNORDERED),
    "cummax": (_no_kernel("cummax_cpu"), _UNORDERED),
    "cummin": (_no_kernel("cummin_cpu"), _UNORDERED),
    "unique.all": (_no_kernel("unique"), "unique sorts the values"),  # unique, unique_consecutive
    "unique_dim": (_no_kernel("unique_dim"), "unique sorts the values"),
    **{op: (_no_kernel("searchsorted_out_cpu"), _UNORDERED)
       for op in ("searchsorted", "bucketize")},
    "isin": ("Unsupported input type encountered for isin(): {torch_dtype}",
             "PyTorch's isin sorts"),
    "bincount.self": (_no_kernel("bincount_cpu"), "the values are counts"),   # weights may be
    **{f"{op}.{reduce}": (_no_kernel(kernel), _UNORDERED) for op, reduce, kernel in (
        ("scatter_reduce", "amax", "scatter_gather_tensor_cpu_reduce_amax"),
        ("scatter_reduce", "amin", "scatter_gather_tensor_cpu_reduce_amin"),
        ("index_reduce", "amax", "maximum_cpu"), ("index_reduce", "amin", "minimum_cpu"))},
    # a kernel PyTorch's CPU lacks, though the sum of complex numbers skipping NaNs exists
    **{op: ("nansum on CPU does not support complex inputs",
            "PyTorch's CPU nansum has no complex kernel") for op in ("nansum", "nanmean")},
}


def complex_message(op, dtype, kind=None):
    """`op`'s refusal of a complex tensor of `dtype`: PyTorch's text and why (None when
    PyTorch takes complex tensors in `op`). `kind` picks an entry other than op's own
    (`div_floor` for div with rounding_mode='floor')."""
    entry = MESSAGES.get(kind or op) or MESSAGES.get((kind or op).rstrip("_"))
    if entry is None:
        return None
    text, why = entry
    return text.format(torch_dtype=TORCH_NAMES[dtype.name]), why


def reject_complex(op, t, arg="self", kind=None, dtype=None):
    """Raise PyTorch's error when `t` (argument `arg` of `op`) is a complex tensor and
    PyTorch has no complex kernel for `op` (an op MESSAGES does not list takes it: no
    error). `op` is the name the message starts with (`floor_` for the in-place form);
    `dtype` the one the op would compute in (default: t's), which PyTorch's message names."""
    impl = getattr(t, "_impl", None)
    if impl is None or not impl.dtype.is_complex:
        return
    found = complex_message(op, dtype or impl.dtype, kind)
    if found is None:
        return
    text, why = found
    raise DTypeError(f"{op}(): {text} (argument '{arg}' is {impl.dtype.name}: {why})",
                     op=op, arg=arg)


def reject_complex_no_kernel(op, named, kernel):
    """PyTorch's refusal by a kernel with no complex case (`"{kernel}" not implemented for
    'ComplexFloat'`) for an op MESSAGES does not list by name (the special functions of
    tensorplay/meta/bessel.py: "bessel_j0_cpu" for special_bessel_j0)."""
    tensors = [t for _, t in named if getattr(t, "_impl", None) is not None]
    if not any(t._impl.dtype.is_complex for t in tensors):
        return
    dtype = result_type(*tensors)
    arg, t = next((a, t) for a, t in named if getattr(t, "_impl", None) is not None
                  and t._impl.dtype.is_complex)
    text = _no_kernel(kernel).format(torch_dtype=TORCH_NAMES[dtype.name])
    raise DTypeError(f"{op}(): {text} (argument '{arg}' is {t._impl.dtype.name}: a real "
                     f"function)", op=op, arg=arg)


def reject_complex_args(op, named, kind=None):
    """`reject_complex` for several (name, tensor) arguments: the first complex one is
    blamed, and the message names the promoted dtype, as PyTorch's does (`x % 1j` for a
    float32 x computes in complex64: 'ComplexFloat')."""
    tensors = [t for _, t in named if getattr(t, "_impl", None) is not None]
    if not any(t._impl.dtype.is_complex for t in tensors):
        return
    dtype = result_type(*tensors)
    for arg, t in named:
        reject_complex(op, t, arg, kind, dtype)
