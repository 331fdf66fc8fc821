"""tp.library.opcheck finds the lies a custom op's registrations can tell: a wrong
formula, an undeclared mutation, an output aliasing an input, a wrong fake kernel, a
wrong batching rule, a cuda kernel that disagrees with the cpu one."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import Tensor
from tensorplay.library import OpCheckError, opcheck

SAMPLE = (tp.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]), tp.tensor([2.0, -1.0, 0.5]))


def _mul_op(name, x_formula="grad * y", cuda_factor=1.0):
    """`x * y` with y broadcast over rows: cpu kernel, a cuda kernel (factor
    `cuda_factor`), a fake kernel, and the formulas (x's as given)."""
    op = tp.library.custom_op(f"topcheck::{name}(Tensor x, Tensor y) -> Tensor",
                              derivatives={"x": x_formula,
                                           "y": "sum_to(grad * x, y.sizes())"})
    op.register_kernel("cpu", lambda x, y: x * y)
    op.register_kernel("cuda", lambda x, y: x * y * cuda_factor)
    op.register_fake(lambda x, y: tp.empty_like(x))
    return op


@pytest.mark.filterwarnings("ignore:vmap. there is no batching rule")
def test_a_truthful_op_passes_every_check():
    op = _mul_op("good")
    result = opcheck(op, SAMPLE, dtypes=[tp.float64])
    assert result == {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                      "test_gradcheck": "SUCCESS", "test_faketensor": "SUCCESS",
                      "test_vmap": "SUCCESS", "test_devices": "SUCCESS",
                      "test_schema[float64]": "SUCCESS", "test_faketensor[float64]": "SUCCESS",
                      "test_vmap[float64]": "SUCCESS", "test_devices[float64]": "SUCCESS"}


def test_a_wrong_formula_fails_gradcheck():
    op = _mul_op("wrong_formula", x_formula="grad * y * 2")
    result = opcheck(op, SAMPLE, test_utils=("test_autograd_registration", "test_gradcheck"),
                     raise_exception=False)
    assert result["test_autograd_registration"] == "SUCCESS"
    assert isinstance(result["test_gradcheck"], OpCheckError)
    assert "gradcheck failed" in str(result["test_gradcheck"])
    with pytest.raises(OpCheckError, match=r"opcheck\(topcheck::wrong_formula\): "
                                           r"test_gradcheck failed"):
        opcheck(op, SAMPLE, test_utils="test_gradcheck")


def test_no_derivative_fails_autograd_registration():
    op = tp.library.custom_op("topcheck::no_grad(Tensor x) -> Tensor")
    op.register_kernel("cpu", lambda x: x * 2)
    result = opcheck(op, (SAMPLE[0],), test_utils=("test_autograd_registration",
                                                   "test_gradcheck"), raise_exception=False)
    assert "has no autograd formula" in str(result["test_autograd_registration"])
    assert result["test_gradcheck"].startswith("SKIPPED")


def test_a_lying_mutates_args_fails_the_schema_check():
    @tp.library.custom_op("topcheck::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.mul_(2)                           # writes x, declares nothing
        return x.clone()

    result = opcheck(sneaky, (SAMPLE[0],), test_utils="test_schema", raise_exception=False)
    assert "wrote argument 'x' but its schema does not declare it mutated" in \
        str(result["test_schema"])

    @tp.library.custom_op("topcheck::honest", mutates_args=("x",))
    def honest(x: Tensor) -> None:
        x.mul_(2)

    assert opcheck(honest, (SAMPLE[0],), test_utils="test_schema") == {"test_schema": "SUCCESS"}


def test_an_output_aliasing_an_input_fails_the_schema_check():
    @tp.library.custom_op("topcheck::alias", mutates_args=())
    def alias(x: Tensor) -> Tensor:
        return x.view(-1)

    with pytest.raises(OpCheckError, match="output 0 aliases argument 'x'"):
        opcheck(alias, (SAMPLE[0],), test_utils="test_schema")


def test_a_wrong_fake_kernel_fails():
    op = _mul_op("wrong_fake")
    op.register_fake(lambda x, y: tp.empty_like(y))
    with pytest.raises(OpCheckError, match=r"the fake kernel gives float32\[3\], the real "
                                           r"kernel float32\[2, 3\]"):
        opcheck(op, SAMPLE, test_utils="test_faketensor")
    no_fake = tp.library.custom_op("topcheck::no_fake(Tensor x) -> Tensor")
    no_fake.register_kernel("cpu", lambda x: x + 1)
    with pytest.raises(OpCheckError, match="has no fake kernel"):
        opcheck(no_fake, (SAMPLE[0],), test_utils="test_faketensor")


def test_a_wrong_batching_rule_fails():
    op = _mul_op("wrong_vmap")
    # forgets to line up y's batch dim with x's: y's examples meet x's rows
    op.register_vmap(lambda info, in_dims, x, y: (x * y, 0))
    result = opcheck(op, SAMPLE, test_utils="test_vmap", raise_exception=False)
    assert "under vmap, output 0 of example" in str(result["test_vmap"])


def test_cuda_is_compared_with_cpu():
    pytest.importorskip("triton")
    bad = _mul_op("wrong_cuda", cuda_factor=1.5)
    result = opcheck(bad, SAMPLE, test_utils="test_devices", raise_exception=False)
    assert "the cuda kernel disagrees with the cpu kernel" in str(result["test_devices"])
    cpu_only = tp.library.custom_op("topcheck::cpu_only(Tensor x) -> Tensor")
    cpu_only.register_kernel("cpu", lambda x: x + 1)
    assert opcheck(cpu_only, (SAMPLE[0],), test_utils="test_devices") == \
        {"test_devices": "SKIPPED: no cuda kernel"}


def test_an_op_of_ops_yaml_passes_too():
    pytest.importorskip("triton")
    assert set(opcheck(tp.ops.mul.Tensor, SAMPLE).values()) == {"SUCCESS"}
    assert set(opcheck(tp.ops.sum.default, (SAMPLE[0], None)).values()) == {"SUCCESS"}


def test_unknown_check_names_are_refused():
    with pytest.raises(ValueError, match="unknown test_utils"):
        opcheck(_mul_op("names"), SAMPLE, test_utils=("test_everything",))


def test_make_tensor_has_pytorchs_signature():
    t = tp.testing.make_tensor(2, 3, dtype=tp.float64, device="cpu", low=-1, high=1,
                               requires_grad=True)
    assert tuple(t.shape) == (2, 3) and t.requires_grad
    assert np.all(np.abs(t.detach().numpy()) <= 1)
