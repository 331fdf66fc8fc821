"""native_dropout on the `cuda` device: a Philox mask and the scaled input, two
pointwise launches (the expressions of pointwise.py's template)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._random import philox_inputs
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from triton_kernels._launch import new_tensor, operands
from triton_kernels.pointwise import run, run_expression


# ---- dropout -----------------------------------------------------------------------------
def native_dropout(input, p, train, generator):
    """(output, keep mask): keep = uniform(0, 1) >= p (Philox at the cuda generator's seed
    and offset), output = input * keep / (1 - p). Not training: a copy, all True."""
    shape_rule("dropout.native_dropout")("native_dropout", (input, p, train, generator))
    device, (x,) = operands("native_dropout", input=input)
    sizes, dtype = x._impl.sizes, x._impl.dtype
    out = new_tensor(sizes, dtype, device)
    keep = new_tensor(sizes, dt.bool, device)
    if train is False:
        run("copy", out, (x,), dtype)
        return out, call_below_autograd("fill_.Scalar", keep, True)
    n = x._impl.numel()
    seed, offset = philox_inputs(generator, n)
    run_expression("dropout_mask", "tl.rand(seed, index + offset) >= p", keep, (), dtype,
                   {"seed": seed, "offset": offset, "p": p})
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    run_expression("dropout_apply", "x * (y * scale)", out, (x, keep), dtype,
                   {"scale": scale})
    return out, keep
