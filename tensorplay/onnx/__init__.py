"""`tp.onnx`: PyTorch's ONNX exporter's names, so that `import torch.onnx` (a line many
training scripts have, for an optional export at the end) works unchanged.

The export itself is not built yet: it needs a captured graph of the model, which is the
graph-capture and tp.compile issue's work (TensorPlay issue 31). Until then `export`
raises `OnnxExporterError` (a NotImplementedError) saying so, before touching the file;
it never writes a file that only looks like a model. `is_in_onnx_export()` is False:
no export is ever running, which is what model code that branches on it needs to know.
"""
from __future__ import annotations

import enum

from tensorplay.onnx import errors  # noqa: F401
from tensorplay.onnx.errors import OnnxExporterError

__all__ = ["errors", "export", "is_in_onnx_export", "OnnxExporterError", "ONNXProgram",
           "OperatorExportTypes", "TrainingMode", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic", "select_model_mode_for_export"]

producer_name = "tensorplay"
producer_version = "0.1.0"

_WHY = ("ONNX export is not built in TensorPlay yet: it needs the model's captured graph, "
        "which the graph-capture and tp.compile issue (TensorPlay issue 31) builds")


class TrainingMode(enum.IntEnum):
    """Which mode the exported model is traced in (torch.onnx.TrainingMode)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class ONNXProgram:
    """What torch.onnx.export returns; none is ever made here (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        raise OnnxExporterError(f"ONNXProgram(): {_WHY}", op="onnx.ONNXProgram")


def export(model, args=(), f=None, **options):
    """Refused, with the reason: see the module docstring. Accepts PyTorch's arguments so
    that the error, not a TypeError about a keyword, is what a script meets."""
    raise OnnxExporterError(f"onnx.export(): {_WHY}; the model was not exported"
                            + (f" and {str(f)!r} was not written" if f is not None else ""),
                            op="onnx.export")


def dynamo_export(model, *args, **kwargs):
    raise OnnxExporterError(f"onnx.dynamo_export(): {_WHY}", op="onnx.dynamo_export")


def is_in_onnx_export():
    """False: no ONNX export runs in TensorPlay (model code may branch on this)."""
    return False


def is_onnxrt_backend_supported():
    return False


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """A symbolic function only matters to an export, which cannot run here: refused, so a
    script does not believe its custom op is exportable."""
    raise OnnxExporterError(f"onnx.register_custom_op_symbolic(): {_WHY}",
                            op="onnx.register_custom_op_symbolic")


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    raise OnnxExporterError(f"onnx.unregister_custom_op_symbolic(): {_WHY}",
                            op="onnx.unregister_custom_op_symbolic")


class select_model_mode_for_export:
    """`with select_model_mode_for_export(model, TrainingMode.EVAL):` the model in that
    mode for the region, its mode restored after (PyTorch's context manager: it needs no
    exporter, and scripts use it around their own tracing)."""

    def __init__(self, model, mode):
        self.model, self.mode = model, TrainingMode(mode)

    def __enter__(self):
        self._was_training = self.model.training
        if self.mode is not TrainingMode.PRESERVE:
            self.model.train(self.mode is TrainingMode.TRAINING)
        return self.model

    def __exit__(self, *exc):
        self.model.train(self._was_training)
        return False


