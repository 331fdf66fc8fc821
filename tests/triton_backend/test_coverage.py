"""Which ops the Triton backend serves, and how: a specialised Triton kernel (a
high-priority candidate next to the generic one), a Triton kernel, the Composite
decomposition (views, scalar overloads, matmul, to...), or a host copy (the `_on_host`
kernels of triton_kernels/linalg.py: LAPACK on the host, logged; not counted as served). The table is printed
(`pytest -s`); the number of Triton-served ops only goes up. An op whose Triton kernel
serves some shapes and hands the rest to a lower-priority `_on_host` candidate (inv_ex,
slogdet, solve, cholesky_ex, solve_triangular, lu_factor_ex: small matrices in registers)
counts as a Triton kernel."""
from triton_util import CUDA  # noqa: F401 - skips without Triton

from tensorplay.dispatch import DispatchKey
from tensorplay.dispatch.dispatcher import dispatcher

# Raise this when you add kernels; never lower it by accident. (Lowered once, 302 -> 301,
# on purpose: repeat_interleave(Tensor, repeats=Tensor) became Composite on every backend,
# index_select at repeat_interleave(repeats) as in PyTorch, so that its backward saves
# what PyTorch's saves; its Triton kernel went with it.)
TRITON_SERVED_AT_LEAST = 406   # 307 before the rest of PyTorch's surface (issue 29) came:
# the special functions, the new pointwise, pooling, reduction and nn kernels
SPECIALISED = {"mm", "bmm"}
# Triton kernels for small matrices, with the host fallback below them for larger ones:
# each op and the module of triton_kernels that holds both.
WITH_HOST_FALLBACK = {"linalg_inv_ex": "linalg", "linalg_slogdet": "linalg",
                      "linalg_solve": "linalg", "linalg_cholesky_ex": "linalg",
                      "linalg_solve_triangular": "triangular",
                      "linalg_lu_factor_ex": "triangular"}


def cuda_table():
    table = {"specialised": [], "triton": [], "host": [], "composite": [], "sparse": [],
             "none": []}
    for name in sorted(dispatcher.ops):
        if name.startswith("test.") or "::" in name:   # ops tests define for themselves
            continue
        handle = dispatcher.ops[name]
        if handle.kernels[DispatchKey.Composite] is None and all(
                not reg.candidates for key, reg in handle.registries.items()
                if key != DispatchKey.Sparse):
            table["sparse"].append(name)      # sparse inputs only: sparse tensors live on the cpu
            continue
        registry = handle.registries.get(DispatchKey.CUDA)
        if registry is not None and registry.candidates and all(
                c.name.endswith("_on_host") for c in registry.candidates):
            table["host"].append(name)
        elif registry is not None and registry.candidates:
            special = any(c.priority > 0 for c in registry.candidates)
            table["specialised" if special else "triton"].append(name)
        elif handle.kernels[DispatchKey.Composite] is not None:
            table["composite"].append(name)
        else:
            table["none"].append(name)
    return table


def test_record_how_each_op_runs_on_cuda():
    table = cuda_table()
    for kind, ops in table.items():
        print(f"\n{kind} ({len(ops)}): {', '.join(ops)}")
    served = len(table["specialised"]) + len(table["triton"])
    assert served >= TRITON_SERVED_AT_LEAST, table
    assert SPECIALISED <= set(table["specialised"])
    assert set(WITH_HOST_FALLBACK) <= set(table["triton"])


def test_the_host_fallbacks_rank_below_the_triton_kernels():
    for name, module in WITH_HOST_FALLBACK.items():
        candidates = dispatcher.ops[name].registries[DispatchKey.CUDA].candidates
        assert [c.name for c in candidates] == [f"triton_kernels.{module}.{name}",
                                                f"triton_kernels.{module}.{name}_on_host"]
        assert candidates[0].shape is not None and candidates[0].priority > \
            candidates[1].priority


def test_every_op_runs_on_cuda():
    """An op with neither a CUDA kernel nor a Composite decomposition cannot run on
    `cuda`: give it `CUDA: module.fn` in ops.yaml (for a pointwise op, one expression in
    triton_kernels/pointwise.py)."""
    assert cuda_table()["none"] == []
