"""tp.onnx: `import tensorplay.onnx` works without the onnx package (scripts import
torch.onnx for an optional export at their end); the names and signatures are
PyTorch's. The export itself is tested in tests/test_onnx_export.py."""
import inspect

import pytest
import torch

import tensorplay as tp
import tensorplay.onnx


def test_export_has_torchs_signature():
    theirs = list(inspect.signature(torch.onnx.export).parameters)
    assert list(inspect.signature(tp.onnx.export).parameters) == theirs


@pytest.mark.parametrize("call", [
    lambda: tp.onnx.register_custom_op_symbolic("mylib::op", lambda g, x: x, 17),
    lambda: tp.onnx.unregister_custom_op_symbolic("mylib::op", 17),
])
def test_torchscript_symbolics_are_refused_with_the_way_that_works(call):
    with pytest.raises(tp.onnx.errors.OnnxExporterError, match="custom_translation_table"):
        call()


def test_errors_are_runtime_errors_as_torchs():
    assert issubclass(tp.onnx.errors.OnnxExporterError, RuntimeError)
    assert issubclass(torch.onnx.errors.OnnxExporterError, RuntimeError)
    assert issubclass(tp.onnx.errors.UnsupportedOperatorError, tp.onnx.OnnxExporterError)


def test_is_in_onnx_export_is_false_as_outside_an_export():
    assert tp.onnx.is_in_onnx_export() is False
    assert torch.onnx.is_in_onnx_export() is False


def test_training_mode_and_the_mode_context():
    model = tp.nn.Sequential(tp.nn.Linear(2, 2), tp.nn.Dropout(0.5))
    assert {m.name: int(m) for m in tp.onnx.TrainingMode} == \
        {name: int(v) for name, v in torch.onnx.TrainingMode.__members__.items()}
    model.train()
    with tp.onnx.select_model_mode_for_export(model, tp.onnx.TrainingMode.EVAL):
        assert not model.training and not model[1].training
    assert model.training and model[1].training
