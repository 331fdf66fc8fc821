"""The second-level registry exercised for real on the CUDA key: dtype promotion to a
kernel's dtype, layout conversion for a contiguous-only kernel, the opt-in device
fallback, and non-contiguous inputs that the strided kernels take as they are.
(The aligned matmul handing over to the masked one is in test_matmul.py.)"""
import itertools

import pytest

from triton_util import CUDA, assert_same, make

import tensorplay as tp
from tensorplay.dispatch.dispatcher import OpSchema, dispatcher
from tensorplay.dispatch.kernel_selection import enable_device_fallback
from tensorplay.errors import DeviceError
from triton_kernels import pointwise
from triton_kernels._launch import new_tensor

_counter = itertools.count()


def new_op():
    name = f"test.triton{next(_counter)}"
    return dispatcher.define(OpSchema(name, f"{name}(Tensor self) -> Tensor", ("self",), (0,)))


def call(handle, x):
    return handle.call(x._impl.key_set(), x)


def triton_exp(self):
    """A real Triton launch (the generated `exp` kernel) that only knows float32."""
    assert self.dtype is tp.float32
    out = new_tensor(self.shape, tp.float32, self.device)
    return pointwise.run("exp", out, (self,), tp.float32)


def test_float16_input_is_promoted_to_a_float32_kernel_and_cast_back():
    op = new_op()
    tp.library.Library("CUDA", "TestPromote").impl(op.name, triton_exp, name="exp-f32",
                                                   dtypes={tp.float32})
    x = make((5,), tp.float16)
    with tp.dispatch.explain(file=False) as ex:
        out = call(op, x.cuda())
    assert "dtype promotion float16 -> float32" in ex.text
    assert out.dtype is tp.float16 and out.device == CUDA
    assert_same(out, tp.exp(x))


def test_contiguous_only_kernel_gets_a_contiguous_copy():
    op = new_op()
    seen = []

    def contiguous_exp(self):
        seen.append(self.is_contiguous())
        return triton_exp(self)
    tp.library.Library("CUDA", "TestLayout").impl(op.name, contiguous_exp, name="contig",
                                                  contiguous=True)
    x = make((4, 6))
    with tp.dispatch.explain(file=False) as ex:
        out = call(op, x.cuda().t())
    assert seen == [True] and "layout conversion: contiguous()" in ex.text
    assert "triton    copy_kernel_rank2" in ex.text      # the copy ran on the device
    assert_same(out, tp.exp(x.t()))


def test_strided_kernels_take_non_contiguous_inputs_without_conversion():
    x = make((4, 6))
    cx = x.cuda().t()
    with tp.dispatch.explain(file=False) as ex:
        out = tp.exp(cx).sum(0)
    assert "layout conversion" not in ex.text and "copy_kernel" not in ex.text
    assert_same(out, tp.exp(x.t()).sum(0))


def test_device_fallback_computes_on_the_cpu_only_when_enabled():
    op = new_op()
    tp.library.Library("CPU", "TestDeviceFallback").impl(op.name, lambda self: self * 2,
                                                         name="cpu")
    tp.library.Library("CUDA", "TestDeviceFallback").impl(op.name, lambda self: self,
                                                          name="ints", dtypes={tp.int64})
    x = tp.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(tp.errors.NoKernelError, match="ints"):
        call(op, x)
    enable_device_fallback(True)
    try:
        with pytest.warns(UserWarning, match="computing on the CPU"):
            out = call(op, x)
    finally:
        enable_device_fallback(False)
    assert out.device == CUDA and out.tolist() == [2.0, 4.0]


def test_device_mismatch_through_autograd_and_composites():
    w = tp.ones(3, requires_grad=True)
    with pytest.raises(DeviceError, match=r"mul\(\)"):
        w * tp.ones(3, device="cuda")
    with pytest.raises(DeviceError, match=r"mm\(\)"):
        tp.ones(2, 3, device="cuda") @ tp.ones(3, 2)
