"""What the generated autocast wrappers call: the cast policies, written once.

A wrapper in an `Autocast<backend>` slot (`tensorplay/_generated/autocast_wrappers.py`)
asks one of the policy functions below for the dtype to run in, casts its tensor
arguments with `cached_cast`, then redispatches below its own key. The policies and
their eligibility rules are PyTorch's (`aten/src/ATen/autocast_mode.h`):

    policy              runs in                                  e.g.
    lower               the autocast dtype (bfloat16 / float16)   mm, linear, conv
    fp32                float32                                   losses, exp on CUDA
    fp32_set_opt_dtype  float32 through `dtype=`, unless given     sum, softmax on CUDA
    promote             the widest floating type of the inputs    cat, stack, addcmul
    lower_contracted    the autocast dtype, for the operands a    einsum
                        contraction reaches (cast_contracted)
    banned              -- (refused)                              binary_cross_entropy

Only floating tensors on the autocast device are cast, and never float64 ones: a
float64 tensor was asked for on purpose.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.amp.state import state
from tensorplay.dispatch import trace
from tensorplay.errors import AmpError


def _check_enabled(device_type, op):
    """The guard: an Autocast slot is only reached while autocast is on for the device.
    Reaching it otherwise (a hand-made IncludeKeys of the key) has no dtype to use."""
    if not state.enabled[device_type]:
        raise AmpError(
            f"{op}: reached the Autocast{'CPU' if device_type == 'cpu' else 'CUDA'} "
            f"wrapper but autocast is disabled for device_type '{device_type}'; enable it "
            f"with tp.autocast('{device_type}'), not by including the dispatch key",
            op=op)


def is_eligible(value, device_type):
    """A tensor autocast may cast: floating, not float64, on the autocast device."""
    impl = getattr(value, "_impl", None)
    return (impl is not None and impl.dtype.is_floating_point and impl.dtype is not dt.float64
            and impl.device.type == device_type)


# ---- the policies: each returns the dtype the op runs in -------------------------------
def lower_type(device_type, op):
    _check_enabled(device_type, op)
    return state.dtype[device_type]


def fp32_type(device_type, op):
    _check_enabled(device_type, op)
    return dt.float32


def promote_type(device_type, op, *args):
    """float32 if any eligible input is float32, else the autocast dtype (float64 inputs
    are left out, as they are not cast)."""
    _check_enabled(device_type, op)
    lower = state.dtype[device_type]
    for arg in args:
        for value in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if is_eligible(value, device_type) and value._impl.dtype is not lower:
                return dt.float32
    return lower


def fp32_opt_dtype(device_type, op, first, dtype):
    """The `dtype=` to call with: the caller's if given, float32 if the first input is
    eligible (so the reduction accumulates and returns float32), else none."""
    _check_enabled(device_type, op)
    if dtype is None and is_eligible(first, device_type):
        return dt.float32
    return dtype


def banned(device_type, op):
    _check_enabled(device_type, op)
    raise AmpError(
        f"{op}: unsafe to autocast (it is refused under autocast on '{device_type}'). Many "
        f"models use a sigmoid layer right before the binary cross entropy layer; combine "
        f"the two with binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss), which is "
        f"safe to autocast", op=op)


def cast_contracted(to_type, equation, tensors, device_type, arg):
    """einsum's operands as PyTorch's CPU autocast leaves them (CUDA lists einsum as a
    `lower` op). On the CPU einsum is no autocast op but a chain of pairwise products,
    left to right: a pair contracted over a shared letter runs in bmm (cast to the
    autocast dtype), any other pair in mul (no policy: promotes). So every operand up to
    the last contracted pair is cast, and the ones multiplied in after it are not:
    `ij,jk->ik` runs in bfloat16, `i,j->ij` in float32."""
    from tensorplay.kernel_support.einsum import parse_einsum
    from tensorplay.meta.einsum import contractions
    sizes = [getattr(t, "_impl", None) and t._impl.sizes for t in tensors]
    if any(s is None for s in sizes) or any(0 in s for s in sizes):
        return tensors     # not tensors, or an empty operand: einsum's own checks speak
    spec = parse_einsum("einsum", equation, sizes)
    reached = max([i for i, summed in contractions(spec, sizes) if summed], default=-1)
    return type(tensors)(cached_cast(to_type, t, device_type, f"{arg}[{i}]")
                         if i <= reached else t for i, t in enumerate(tensors))


# ---- casting --------------------------------------------------------------------------
def cached_cast(to_type, value, device_type, arg):
    """`value` in `to_type` if autocast may cast it; a list is cast element by element.

    A float32 leaf that requires grad (a weight) cast to the autocast dtype is cached
    until the outermost autocast region exits: a weight used by many ops is cast once
    per forward pass, and its gradient flows back through that one cast."""
    if isinstance(value, (list, tuple)):
        return type(value)(cached_cast(to_type, v, device_type, f"{arg}[{i}]")
                           for i, v in enumerate(value))
    if not is_eligible(value, device_type) or value._impl.dtype is to_type:
        return value
    impl = value._impl
    cacheable = (state.cache_enabled and to_type is state.dtype[device_type]
                 and impl.dtype is dt.float32 and impl.requires_grad
                 and impl.grad_fn is None and impl.base is None)
    if cacheable:
        hit = state.cache.get(id(impl))
        if hit is not None:
            if trace.state.active:
                trace.hop("cast", f"{arg}: {impl.dtype.name} -> {to_type.name} (cached)")
            return hit[1]
    if trace.state.active:
        trace.hop("cast", f"{arg}: {impl.dtype.name} -> {to_type.name}")
    cast = value.to(to_type)
    if cacheable:
        state.cache[id(impl)] = (impl, cast)
    return cast
