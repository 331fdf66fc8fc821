"""Database entries for copies, fills and conversions: copy_, fill_, zero_, clone, _to_copy,
to, and the dtype shorthands byte, char, short."""
from __future__ import annotations
import torch
import tensorplay as tp
from tensorplay.errors import ArgumentError, DeviceError, ShapeError
from opinfo.core import (
    ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput as E, make_tensor, OpInfo, rng_for,
    SampleInput as S,
)
from opinfo.samples import _t, sample_inputs_unary, UNARY_SHAPES

def _source_low(src, dst):
    """Float -> unsigned conversion of negative values is undefined (in C, hence in both
    NumPy and PyTorch): sources for uint8 targets stay non-negative (a complex source's
    real part too)."""
    return 0 if dst is tp.uint8 and src.is_differentiable else None


# Complex tensors convert to and from every dtype: a real number's imaginary part is 0, a
# complex number converted to a real dtype keeps its real part (with PyTorch's warning).
WITH_COMPLEX = ALL_DTYPES + COMPLEX


# ---- copies and fills -----------------------------------------------------------------
def _copy_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for src_dtype in WITH_COMPLEX:
        yield S(make_tensor((3, 4), dtype, device, rng=rng),
                (make_tensor((3, 4), src_dtype, device, rng=rng, layout="transposed",
                             low=_source_low(src_dtype, dtype)),),
                name=f"from {src_dtype.name}")
    low = _source_low(dtype, dtype)
    yield S(make_tensor((3, 4), dtype, device, rng=rng, layout="transposed"),
            (make_tensor((4,), dtype, device, rng=rng, low=low),), name="broadcast src")
    yield S(make_tensor((2, 3), dtype, device, rng=rng, layout="strided"),
            (make_tensor((), dtype, device, rng=rng, low=low),), name="0-dim src")
    yield S(make_tensor((), dtype, device, rng=rng),
            (make_tensor((), dtype, device, rng=rng, low=low),), name="0-dim")
    yield S(make_tensor((0, 3), dtype, device, rng=rng),
            (make_tensor((3,), dtype, device, rng=rng, low=low),), name="empty self")


def errors_copy(op, device):
    yield E(S(_t((3, 4), device=device), (_t((2, 4), device=device),)), ShapeError,
            r"copy_\(\): argument 'src' \(shape \[2, 4\]\) is not broadcastable", arg="src")
    yield E(S(_t((3, 1), device=device), (_t((3, 4), device=device),)), ShapeError,
            r"copy_\(\): argument 'src' \(shape \[3, 4\]\) cannot be broadcast to 'self'",
            arg="src")
    yield E(S(_t((3, 4), device=device), (tp.empty(3, 4, device="meta"),)), DeviceError,
            r"copy_\(\): cannot copy out of a meta tensor", arg="src", meta=False)


def _fill_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    values = [2, 2.5, True, 0, -1 if dtype is not tp.uint8 else 7]
    for v in values:
        for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0,), "contiguous")):
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (v,),
                    name=f"{list(shape)} {layout} <- {v!r}")
    yield S(make_tensor((2, 3), dtype, device, rng=rng),
            (tp.tensor(3, dtype=tp.int64, device=device),), name="0-dim tensor value")


def errors_fill(op, device):
    yield E(S(_t((3,), device=device), ("a",)), ArgumentError,
            r"fill_\(\) received an invalid combination of arguments: got \(Tensor of dtype "
            r"\w+, str\)", meta=False)
    yield E(S(_t((3,), device=device), (_t((2,), device=device),)), ShapeError,
            r"fill_\(\): argument 'value' must be a 0-dim tensor, but got a 1-dim tensor",
            arg="value")


def _zero_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, False,
                                   shapes=[s for s in UNARY_SHAPES if s[1] != "expanded"])


# ---- conversions ----------------------------------------------------------------------
def _to_copy_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_differentiable
    for target in WITH_COMPLEX:
        yield S(make_tensor((3, 4), dtype, device, rng=rng, layout="transposed",
                            low=_source_low(dtype, target), requires_grad=grad),
                kwargs={"dtype": target}, name=f"to {target.name}")
    # Samples that name their device are not meta samples: with meta inputs they would ask
    # for a copy out of meta, which raises (tests/test_meta.py checks it).
    yield S(make_tensor((2, 3), dtype, device, rng=rng, requires_grad=grad),
            kwargs={"device": tp.device(device)}, name="same device", meta=False)
    yield S(make_tensor((), dtype, device, rng=rng, requires_grad=grad), name="no change")


def _to_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_differentiable

    def x(layout="contiguous", low=None):
        return make_tensor((3, 4), dtype, device, rng=rng, layout=layout, low=low,
                           requires_grad=grad)

    for target in WITH_COMPLEX:
        yield S(x("transposed", _source_low(dtype, target)), (target,), name=f"to {target.name}")
    yield S(x(), (dtype,), name="same dtype (returns self)")
    yield S(x(), (dtype,), {"copy": True}, name="same dtype, copy=True")
    yield S(x(), kwargs={"dtype": tp.float64}, name="dtype= keyword")
    yield S(x(), (device,), name="same device (returns self)", meta=False)
    yield S(x("strided", _source_low(dtype, tp.int32)), (tp.device(device), tp.int32),
            name="device and dtype", meta=False)
    yield S(x(), (make_tensor((2,), tp.float64, device, rng=rng),), name="like other")
    yield S(x(), (make_tensor((2,), dtype, device, rng=rng),), name="like other, same dtype")
    def image():
        return make_tensor((2, 3, 4, 5), dtype, device, rng=rng, requires_grad=grad)
    yield S(image(), kwargs={"memory_format": tp.channels_last}, name="to channels_last")
    yield S(image(), kwargs={"memory_format": tp.preserve_format}, name="preserve_format")
    yield S(x(), kwargs={"memory_format": tp.contiguous_format, "dtype": tp.float64},
            name="contiguous_format and dtype")


def errors_to(op, device):
    yield E(S(_t((3,), device=device), ("float33",)), ArgumentError,
            r"to\(\): argument 'device' must be a device, but got 'float33'", arg="device",
            meta=False)
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        yield E(S(_t((3,), device=device), ("cuda",)), DeviceError, r"cuda", meta=False)


def _conversion_samples(op, device, dtype, requires_grad):
    target = {"float": tp.float32, "double": tp.float64, "long": tp.int64, "int": tp.int32,
              "bool": tp.bool, "half": tp.float16, "bfloat16": tp.bfloat16}[op.name]
    low = _source_low(dtype, target)
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=low)


COPIES = [
    OpInfo("copy_", overloads=("copy_",), mutates_input=True, sample_inputs_func=_copy_samples,
           dtypes=WITH_COMPLEX, error_inputs_func=errors_copy, supports_autograd=False),
    OpInfo("fill_", overloads=("fill_.Scalar", "fill_.Tensor"), mutates_input=True, ref="Tensor.fill_",
           dtypes=WITH_COMPLEX, sample_inputs_func=_fill_samples, error_inputs_func=errors_fill,
           supports_autograd=False),
    OpInfo("zero_", overloads=("zero_",), mutates_input=True, ref="Tensor.zero_",
           dtypes=WITH_COMPLEX, sample_inputs_func=_zero_samples, supports_autograd=False),
    OpInfo("clone", overloads=("clone",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("_to_copy", overloads=("_to_copy",), ref=torch.ops.aten._to_copy,
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_to_copy_samples),
    OpInfo("to", overloads=("to.dtype", "to.device", "to.other", "to.memory_format"),
           ref="Tensor.to", dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_to_samples, error_inputs_func=errors_to),
]


for _name in ("float", "double", "long", "int", "bool", "half", "bfloat16"):
    # Finite differences need a float64 result: only double() has one.
    COPIES.append(OpInfo(_name, overloads=(_name,), ref=f"Tensor.{_name}",
                         sample_inputs_func=_conversion_samples, gradcheck=_name == "double"))
# to a complex dtype, from any dtype; cdouble's complex128 result takes a gradcheck
for _name in ("cfloat", "cdouble"):
    COPIES.append(OpInfo(_name, overloads=(_name,), ref=f"Tensor.{_name}", dtypes=WITH_COMPLEX,
                         grad_dtypes=GRAD_COMPLEX, sample_inputs_func=sample_inputs_unary,
                         gradcheck=_name == "cdouble"))



# ---- byte, char, short ------------------------------------------------------------------
def _conversion_samples(op, device, dtype, requires_grad):
    """Values every target holds (uint8 takes no negatives; int8 no more than 127)."""
    low, high = (0, 100) if op.name == "byte" or dtype is tp.uint8 else (-100, 100)
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=low, high=high)

MOVED_DB_VIEWS_INPLACE_TMP = [
    *[OpInfo(name, overloads=(name,), ref=f"Tensor.{name}", gradcheck=False,
             sample_inputs_func=_conversion_samples) for name in ("byte", "char", "short")],
]

op_db = COPIES + MOVED_DB_VIEWS_INPLACE_TMP
