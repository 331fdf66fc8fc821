"""tp.onnx: `import tensorplay.onnx` works at once (scripts import torch.onnx for an
optional export at their end); export itself is not built (the compile issue, 31), so
every export entry point refuses with a typed NotImplementedError and writes nothing."""
import inspect
import os

import pytest
import torch

import tensorplay as tp
import tensorplay.onnx
from tensorplay.errors import NotBuiltYetError


def test_export_refuses_and_writes_nothing(tmp_path):
    path = tmp_path / "model.onnx"
    model = tp.nn.Linear(3, 2)
    with pytest.raises(tp.onnx.OnnxExporterError, match=r"onnx\.export\(\).*issue 31") as err:
        tp.onnx.export(model, (tp.randn(1, 3),), str(path), input_names=["x"],
                       output_names=["y"], dynamic_axes={"x": {0: "batch"}}, opset_version=17)
    assert isinstance(err.value, NotImplementedError)
    assert isinstance(err.value, NotBuiltYetError) and err.value.op == "onnx.export"
    assert not os.path.exists(path)


@pytest.mark.parametrize("call", [
    lambda: tp.onnx.dynamo_export(tp.nn.Linear(2, 2), tp.randn(1, 2)),
    lambda: tp.onnx.register_custom_op_symbolic("mylib::op", lambda g, x: x, 17),
    lambda: tp.onnx.unregister_custom_op_symbolic("mylib::op", 17),
    lambda: tp.onnx.ONNXProgram(),
])
def test_every_export_entry_point_refuses(call):
    with pytest.raises(tp.onnx.errors.OnnxExporterError, match="issue 31"):
        call()


def test_is_in_onnx_export_is_false_as_outside_an_export():
    assert tp.onnx.is_in_onnx_export() is False
    assert torch.onnx.is_in_onnx_export() is False


def test_export_accepts_torchs_keywords():
    """A script's keywords reach the refusal, not a TypeError about an argument."""
    theirs = [p for p in inspect.signature(torch.onnx.export).parameters
              if p not in ("model", "args", "f")]
    with pytest.raises(NotBuiltYetError):
        tp.onnx.export(tp.nn.Linear(2, 2), (tp.randn(1, 2),), None,
                       **{name: None for name in theirs})


def test_training_mode_and_the_mode_context():
    model = tp.nn.Sequential(tp.nn.Linear(2, 2), tp.nn.Dropout(0.5))
    assert {m.name: int(m) for m in tp.onnx.TrainingMode} == \
        {name: int(v) for name, v in torch.onnx.TrainingMode.__members__.items()}
    model.train()
    with tp.onnx.select_model_mode_for_export(model, tp.onnx.TrainingMode.EVAL):
        assert not model.training and not model[1].training
    assert model.training and model[1].training
