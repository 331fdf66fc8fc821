"""`tp.onnx.errors`: the exporter's error types, at torch.onnx.errors' path."""
from tensorplay.errors import TensorPlayError

__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterError(TensorPlayError):
    """The model could not be exported (a RuntimeError, as torch.onnx's)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the captured graph that has no ONNX translation; `op` names it."""
