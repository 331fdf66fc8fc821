"""A Triton kernel inside a custom op: `wrap_triton` and `triton_op` (PyTorch's names).

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, a, BLOCK: tl.constexpr): ...

    @tp.library.triton_op("mylib::scale", mutates_args=())
    def scale(x: Tensor, a: float) -> Tensor:
        out = tp.empty_like(x)
        n = x.numel()
        tp.library.wrap_triton(scale_kernel)[(triton.cdiv(n, 64),)](x, out, n, a, BLOCK=64)
        return out

`wrap_triton(kernel)[grid](...)` launches the kernel as the built-in launchers of
triton_kernels/ do, through their one `launch` (triton_kernels/_launch.py): each tensor
argument becomes the pointer object Triton takes (`pointer`), under TRITON_INTERPRET=1 the
interpreter runs it (one launch at a time), and explain() shows a `triton` hop naming the
kernel and grid. A profiler sees the launch as a `kernel` event nested in the op's event.
"""
from __future__ import annotations

from tensorplay.dispatch.trace import observers
from tensorplay.library.custom_ops import custom_op

__all__ = ["wrap_triton", "triton_op"]


def _is_tensor(value):
    return getattr(value, "_impl", None) is not None


class TritonLauncher:
    """`wrap_triton(kernel)`: index it with the grid, call it with the arguments."""

    def __init__(self, kernel):
        self.kernel = kernel
        fn = getattr(kernel, "fn", kernel)          # a JITFunction, or an Autotuner's
        self.name = getattr(fn, "__name__", repr(kernel))

    def __getitem__(self, grid):
        def run(*args, **meta):
            return self.launch(grid, args, meta)
        return run

    def launch(self, grid, args, meta):
        from triton_kernels._launch import launch, pointer
        args = [pointer(a) if _is_tensor(a) else a for a in args]
        meta = {k: pointer(v) if _is_tensor(v) else v for k, v in meta.items()}
        listeners = list(observers.listeners)
        for listener in listeners:
            listener.begin(f"triton {self.name}", "kernel")
        try:
            launch(self.name, self.kernel, grid, *args, **meta)
        finally:
            for listener in listeners:
                listener.end()

    def __repr__(self):
        return f"wrap_triton({self.name})"


def wrap_triton(triton_kernel, /):
    """`wrap_triton(kernel)[grid](*args, **meta)`: launch a `@triton.jit` kernel (or an
    autotuned one) on TensorPlay tensors, inside a custom op."""
    if not hasattr(triton_kernel, "__getitem__"):
        raise TypeError(f"wrap_triton(): expected a @triton.jit or @triton.autotune kernel, "
                        f"got {type(triton_kernel).__name__}")
    return TritonLauncher(triton_kernel)


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """PyTorch's `torch.library.triton_op`: a custom op whose function launches Triton
    kernels with `wrap_triton`; the function is its kernel on every device (a `cpu`
    tensor reaching it is an error of Triton's, as in PyTorch). The op takes the
    `register_*` methods of any custom op."""
    return custom_op(name, fn, mutates_args=mutates_args, schema=schema, tags=("triton",))
