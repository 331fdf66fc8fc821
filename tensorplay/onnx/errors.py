"""`tp.onnx.errors`: the exporter's error types, at torch.onnx.errors' path."""
from tensorplay.errors import NotBuiltYetError

__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterError(NotBuiltYetError):
    """Raised by every entry point of ONNX export (not built yet in TensorPlay)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operator the exporter cannot translate (torch.onnx.errors' name)."""
