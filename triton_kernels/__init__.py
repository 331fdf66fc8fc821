"""The Triton backend: kernels registered for the CUDA dispatch key.

ops.yaml names them as `module.function` (`dispatch: {CUDA: pointwise.add}` is
`triton_kernels/pointwise.py:add`); tensorplay/_backends.py registers them when
`triton` imports. Specialised extra candidates (the aligned matmul) register
themselves through a `tp.library.Library("CUDA", ...)` block in their module.

Each launcher follows the Triton tutorials: check -> allocate -> grid -> launch
(triton_kernels/_launch.py). Without a GPU, set `TENSORPLAY_TRITON_INTERPRET=1`
(or `TRITON_INTERPRET=1`) and the same kernels run in Triton's interpreter on host
memory: slow, but every line can be stepped through with a debugger.
`python -m triton_kernels.compile_check` compiles them for a real GPU (sm_90 by
default) with Triton's compiler and ptxas, also without one.
"""
# Imported first, whatever submodule is asked for: tensorplay.cuda decides interpreter
# mode (TRITON_INTERPRET) before any @triton.jit function below is defined.
from tensorplay import cuda as _cuda  # noqa: F401


def source(op, rank=1):
    """The generated Triton source of a pointwise kernel (see triton_kernels/_template.py):

        >>> print(triton_kernels.source("add"))
    """
    from triton_kernels import pointwise
    return pointwise.source(op, rank)
