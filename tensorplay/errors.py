"""Typed errors. Every user-facing error names the op, the argument, what was
expected and what was given, e.g.

    ShapeError: add(): argument 'other' (shape [4]) is not broadcastable with argument 'self' (shape [2, 3])
"""


class TensorPlayError(RuntimeError):
    """Base of TensorPlay's errors; `op` and `arg` say where it happened."""

    def __init__(self, message, op=None, arg=None):
        super().__init__(message)
        self.op = op
        self.arg = arg


class ShapeError(TensorPlayError, ValueError):
    """Sizes that do not fit: broadcasting, matmul inner dims, view sizes."""


class DTypeError(TensorPlayError, TypeError):
    """A dtype the op does not accept (float index, int input to sqrt-like ops...)."""


class DeviceError(TensorPlayError):
    """Tensors on different devices, or a device that is not available."""


class ArgumentError(TensorPlayError, TypeError):
    """An argument of the wrong Python type, or a missing/extra argument."""


class DimError(TensorPlayError, IndexError):
    """A dimension or index out of range."""


class LinAlgError(TensorPlayError):
    """A matrix a factorization cannot take: singular, or not positive-definite
    (PyTorch's torch.linalg.LinAlgError, a RuntimeError too)."""


class KernelConstraintError(TensorPlayError):
    """Raised by a kernel that cannot handle its input after all: the registry
    hands the call to the next candidate."""


class NoKernelError(TensorPlayError, NotImplementedError):
    """No kernel (and no fallback) serves this op for these inputs."""


class NotBuiltYetError(TensorPlayError, NotImplementedError):
    """A PyTorch feature whose name exists here so that scripts import, but whose work is
    not built yet (ONNX export, forward-mode AD in gradcheck); the message names the
    TensorPlay issue that builds it. Never a result that pretends to be right."""


class DataDependentError(TensorPlayError, NotImplementedError):
    """The output depends on values, and the input is a meta tensor, which has none:
    nonzero, masked_select, unique, equal, item() (PyTorch raises NotImplementedError or
    RuntimeError for the same calls on meta)."""


class SerializationError(TensorPlayError):
    """`tp.load()` met a file that is not a TensorPlay save: corrupt, truncated, foreign, or
    of a newer format version. The message names the file."""


class LayoutError(TensorPlayError):
    """A tensor of the wrong memory layout for the op: a sparse tensor where strided
    memory is needed (strides, storage, NumPy), or a sparse/dense mix the op refuses."""


class AutogradError(TensorPlayError):
    """A graph that cannot be built or run: an in-place write autograd cannot record (a
    leaf that requires grad, a view of one), a saved tensor modified or freed, a backward
    through tensors that do not require grad. The messages are PyTorch's."""


class AmpError(TensorPlayError):
    """Mixed precision refused a call: an Autocast key reached while autocast is off for
    the device, an op unsafe in lower precision (binary_cross_entropy on CUDA), or a
    GradScaler method called out of order (unscale_ twice before update)."""


def fmt_shape(sizes):
    return "[" + ", ".join(str(s) for s in sizes) + "]"


class AllocationError(TensorPlayError, MemoryError):
    """A tensor too large to allocate: its byte count overflows a 64-bit size or exceeds the
    allocation limit (`tensorplay/_alloc_limit.py`). Raised before any memory is asked for."""


class DerivativeNotImplementedError(AutogradError, NotImplementedError):
    """backward() reached an op whose derivative is not implemented (derivatives.yaml's
    `not_implemented(...)`; PyTorch: "derivative for aten::scatter is not implemented")."""


class Unsupported(TensorPlayError):
    """tp.compile(fullgraph=True) met a graph break (torch._dynamo.exc.Unsupported): the
    message names the reason (`.item()` reads a value into Python, a random op, ...)."""
