"""einsum: NumPy's, on the equation as its shape rule parses it (parse_einsum), with
PyTorch's pairwise contraction order and result layout."""
from __future__ import annotations

import numpy as np

from tensorplay.dispatch.plan_cache import plans
from tensorplay.kernel_support.einsum import einsum_strides
from tensorplay.kernel_support.einsum import parse_einsum
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out_strided
from cpu_kernels.linalg import _acc


def einsum(equation, tensors):
    """np.einsum on the equation with '...' spelled out as letters (the backward formula
    builds its equations from the same parse)."""
    spec = shape_rule("einsum.einsum")("einsum", (equation, tensors))
    parsed = parse_einsum("einsum", equation, [t._impl.sizes for t in tensors])
    arrays = _acc(*tensors, dtype=spec.dtype)     # (mixed operands: in the promoted dtype)
    # The result's layout (PyTorch's) depends on the operands' sizes and strides only.
    layouts = tuple((t._impl.sizes, t._impl.strides) for t in tensors)
    strides = plans.get("cpu.einsum.layout", (parsed.equation, layouts),
                        lambda: einsum_strides(parsed, layouts))
    if len(arrays) <= 2:
        return out_strided(np.einsum(parsed.equation, *arrays), spec.dtype, strides)
    # Three or more operands contract pairwise from left to right, PyTorch's documented
    # order (when opt_einsum is not installed): the order decides the rounding, and
    # whether an inf meets another of the opposite sign (NaN) or stays inf. NumPy puts
    # each pair's result last in the operand list, hence (0, last) after the first pair.
    path = ["einsum_path", (0, 1)] + [(0, k) for k in range(len(arrays) - 2, 0, -1)]
    return out_strided(np.einsum(parsed.equation, *arrays, optimize=path), spec.dtype,
                       strides)
