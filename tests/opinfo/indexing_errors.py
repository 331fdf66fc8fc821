"""Error inputs of the indexing ops (db_indexing.py): float indices, indices out of range
(checked on the host before any memory is touched), wrong ranks, shapes and dtypes,
each a typed error naming the op and the argument."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import ErrorInput, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def _i(values, device):
    return tp.tensor(values, dtype=tp.int64, device=device)


def _float_index(op, device, make_args, arg="index"):
    """The same call with a float32 index tensor (the gather/scatter and index_select
    families also take int32: meta/indexing.py's INT32_INDEX_OPS)."""
    return E(S(_t((3, 4), device=device), make_args(_t((2, 4), device=device))), DTypeError,
             rf"{op}\(\): argument '{arg}' must be an int64 (or int32 )?tensor of indices, "
             rf"but got float32",
             arg=arg)


def errors_gather(op, device):
    yield _float_index("gather", device, lambda idx: (0, idx))
    yield E(S(_t((3, 4), device=device), (0, _i([[0, 3]], device))), DimError,
            r"gather\(\): index 3 in argument 'index' is out of bounds for dimension 0 with "
            r"size 3", arg="index", meta=False)
    yield E(S(_t((3, 4), device=device), (0, _i([-1], device))), ShapeError,
            r"gather\(\): argument 'index' must have the same number of dimensions",
            arg="index")
    yield E(S(_t((3, 4), device=device), (2, _i([[0]], device))), DimError,
            r"gather\(\): Dimension out of range", arg="dim")


def errors_scatter(op, device):
    name = op.name
    yield E(S(_t((3, 4), device=device), (0, _i([[0, 1]], device),
                                          _t((1, 2), tp.float64, device))),
            DTypeError, rf"{name}\(\): argument 'src' \(float64\) must have the same dtype as "
            r"'self' \(float32\)", arg="src")
    yield E(S(_t((3, 4), device=device), (1, _i([[0, 4]], device), _t((1, 2), device=device))),
            DimError, rf"{name}\(\): index 4 in argument 'index' is out of bounds for "
            r"dimension 1 with size 4", arg="index", meta=False)
    yield E(S(_t((3, 4), device=device), (1, _i([[-1]], device), _t((1, 2), device=device))),
            DimError, rf"{name}_\(\): index -1 in argument 'index' is out of bounds",
            arg="index", meta=False, inplace=True)
    yield E(S(_t((3, 4), device=device), (0, _i([[0, 1, 2]], device),
                                          _t((1, 2), device=device))),
            ShapeError, rf"{name}\(\): argument 'index' \(shape \[1, 3\]\) is larger than 'src'",
            arg="index")
    yield _float_index(name, device, lambda idx: (0, idx, _t((2, 4), device=device)))


def errors_scatter_reduce(op, device):
    yield E(S(_t((3, 4), device=device), (0, _i([[0, 1]], device), _t((1, 2), device=device),
                                          "median")),
            ArgumentError, r"scatter_reduce\(\): argument 'reduce' must be one of 'sum', 'prod', "
            r"'mean', 'amax', 'amin', but got 'median'", arg="reduce")
    yield E(S(_t((3, 4), device=device), (0, _i([[5, 1]], device), _t((1, 2), device=device),
                                          "sum")),
            DimError, r"scatter_reduce\(\): index 5 in argument 'index' is out of bounds",
            arg="index", meta=False)


def errors_take(op, device):
    yield _float_index("take", device, lambda idx: (idx,))
    yield E(S(_t((3, 4), device=device), (_i([12], device),)), DimError,
            r"take\(\): index 12 in argument 'index' is out of bounds for dimension 0 with "
            r"size 12", arg="index", meta=False)
    yield E(S(_t((3, 4), device=device), (_i([-13], device),)), DimError,
            r"take\(\): index -13 in argument 'index' is out of bounds", arg="index", meta=False)


def errors_take_along_dim(op, device):
    yield _float_index("take_along_dim", device, lambda idx: (idx, 0), arg="indices")
    yield E(S(_t((3, 4), device=device), (_i([0], device), 0)), ShapeError,
            r"take_along_dim\(\): argument 'indices' must have the same number of dimensions",
            arg="indices")


def errors_index_select(op, device):
    yield _float_index("index_select", device, lambda idx: (0, idx))
    yield E(S(_t((3, 4), device=device), (0, _i([[0]], device))), ShapeError,
            r"index_select\(\): argument 'index' must be a vector", arg="index")
    yield E(S(_t((3, 4), device=device), (1, _i([4], device))), DimError,
            r"index_select\(\): index 4 in argument 'index' is out of bounds for dimension 1",
            arg="index", meta=False)


def errors_index_add(op, device):
    yield E(S(_t((3, 4), device=device), (0, _i([0, 1], device), _t((3, 4), device=device))),
            ShapeError, r"index_add\(\): argument 'source' must have shape \[2, 4\]",
            arg="source")
    yield E(S(_t((3, 4), device=device), (0, _i([0], device), _t((1, 4), tp.float64, device))),
            DTypeError, r"index_add\(\): argument 'source' \(float64\) must have the same dtype",
            arg="source")
    yield E(S(_t((3, 4), device=device), (0, _i([3], device), _t((1, 4), device=device))),
            DimError, r"index_add_\(\): index 3 in argument 'index' is out of bounds",
            arg="index", meta=False, inplace=True)


def errors_index_copy(op, device):
    yield E(S(_t((3, 4), device=device), (0, _i([-1], device), _t((1, 4), device=device))),
            DimError, r"index_copy\(\): index -1 in argument 'index' is out of bounds",
            arg="index", meta=False)
    yield _float_index("index_copy", device, lambda idx: (0, idx, _t((2, 4), device=device)))


def errors_index_fill(op, device):
    yield E(S(_t((3, 4), device=device), (0, _i([0], device), _t((2,), device=device))),
            ShapeError, r"index_fill\(\): argument 'value' must be a 0-dim tensor", arg="value")
    yield E(S(_t((3, 4), device=device), (1, _i([-5], device), 1.0)), DimError,
            r"index_fill\(\): index -5 in argument 'index' is out of bounds", arg="index",
            meta=False)
    yield _float_index("index_fill", device, lambda idx: (0, idx, 1.0))


def errors_masked_fill(op, device):
    yield E(S(_t((3, 4), device=device), (_t((3, 4), tp.uint8, device), 1.0)), DTypeError,
            r"masked_fill\(\): argument 'mask' must be a bool tensor, but got uint8", arg="mask")
    yield E(S(_t((3, 4), device=device), (_t((4,), tp.bool, device), _t((2,), device=device))),
            ShapeError, r"masked_fill\(\): argument 'value' must be a 0-dim tensor",
            arg="value")
    yield E(S(_t((3, 1), device=device), (_t((3, 4), tp.bool, device), 1.0)), ShapeError,
            r"masked_fill_\(\): argument 'mask' \(shape \[3, 4\]\) must broadcast to the shape "
            r"of 'self' \[3, 1\]", arg="mask", inplace=True)
    yield E(S(_t((3, 4), device=device), (_t((5,), tp.bool, device), 1.0)), ShapeError,
            r"masked_fill\(\): argument 'mask' \(shape \[5\]\) is not broadcastable", arg="mask")


def errors_masked_select(op, device):
    yield E(S(_t((3, 4), device=device), (_t((3, 4), tp.int64, device),)), DTypeError,
            r"masked_select\(\): argument 'mask' must be a bool tensor, but got int64",
            arg="mask")
    yield E(S(_t((3, 4), device=device), (_t((3,), tp.bool, device),)), ShapeError,
            r"masked_select\(\): argument 'mask' \(shape \[3\]\) is not broadcastable",
            arg="mask")


def errors_masked_scatter(op, device):
    yield E(S(_t((2, 2), device=device), (tp.ones(2, 2, dtype=tp.bool, device=device),
                                          _t((3,), device=device))),
            ShapeError, r"masked_scatter\(\): argument 'source' has 3 elements but 'mask' "
            r"selects 4", arg="source", meta=False)
    yield E(S(_t((2, 2), device=device), (tp.ones(2, 2, dtype=tp.bool, device=device),
                                          _t((4,), tp.float64, device))),
            DTypeError, r"masked_scatter\(\): argument 'source' \(float64\) must have the same "
            r"dtype", arg="source")


def errors_index(op, device):
    yield E(S(_t((3, 4), device=device), ([_i([0], device)] * 3,)), DimError,
            r"index\(\): too many indices in argument 'indices' for a tensor of dimension 2",
            arg="indices")
    yield E(S(_t((3, 4), device=device), ([_t((2,), device=device)],)), DTypeError,
            r"index\(\): tensors in argument 'indices' must be int64, int32, bool or uint8 "
            r"tensors, but got float32", arg="indices")
    yield E(S(_t((3, 4), device=device), ([None, _i([4], device)],)), DimError,
            r"index\(\): index 4 in argument 'indices' is out of bounds for dimension 1 with "
            r"size 4", arg="indices", meta=False)
    yield E(S(_t((3, 4), device=device), ([_t((4,), tp.bool, device)],)), DimError,
            r"index\(\): the shape of the mask \[4\] in argument 'indices' does not match",
            arg="indices")
    yield E(S(_t((3, 4), device=device), ([_i([0, 1], device), _i([0, 1, 2], device)],)),
            ShapeError, r"index\(\): argument 'indices' \(shape \[3\]\) is not broadcastable",
            arg="indices")


def errors_index_put(op, device):
    yield E(S(_t((3, 4), device=device), ([_i([0], device)], _t((4,), tp.float64, device))),
            DTypeError, r"index_put\(\): argument 'values' \(float64\) must have the same dtype",
            arg="values")
    yield E(S(_t((3, 4), device=device), ([_i([0, 1], device)], _t((3, 4), device=device))),
            ShapeError, r"index_put_\(\): argument 'values' \(shape \[3, 4\]\)", arg="values",
            inplace=True)
    yield E(S(_t((3, 4), device=device), ([_i([3], device)], _t((4,), device=device))),
            DimError, r"index_put\(\): index 3 in argument 'indices' is out of bounds",
            arg="indices", meta=False)
