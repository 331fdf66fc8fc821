"""The Triton backend: kernels registered for the CUDA dispatch key.

ops.yaml names them as `module.function` (`dispatch: {CUDA: pointwise.add}` is
`triton_kernels/pointwise.py:add`); tensorplay/_backend_loading.py registers them when
`triton` imports. Specialised extra candidates (the aligned matmul) register
themselves through a `tp.library.Library("CUDA", ...)` block in their module.

Each launcher follows the Triton tutorials: check -> allocate -> grid -> launch
(triton_kernels/_launch.py). One module per op family (tensorplay/codegen/families.py),
and the support modules (leading `_`) they share:

    pointwise.py     the launchers of every elementwise op: the pointwise, logic,
                     activations and random families share one template per arity
                     (_template.py) and one expression table (pointwise_expressions.py)
    copy.py          copy_, fill_, clone, _to_copy (and the device -> host path)
    reduction.py     one reduction kernel: sum, mean, prod, max/min (+ indices), and
                     amax/amin, all/any, norm, count_nonzero (column reductions over
                     wide tiles); one one-pass statistics kernel: var/std (Welford) and
                     logsumexp (online max and sum)
    scan.py          cumsum, cumprod
    sorting.py       sort, topk, kthvalue, median, mode, unique on _row_sort.py;
                     cummax/cummin as an associative scan over (value, index)
    _row_sort.py     sorting along any dim in place: a bitonic sort of each block,
                     merge-path passes across blocks (O(N log N)), a bitonic top-k
    _bitonic.py      the bitonic networks on (key, index) register tiles
    linalg.py        the blocked tl.dot matmul: mm, bmm (aligned and masked candidates);
                     addmm, addmv, baddbmm, linear with the bias in the matmul's
                     epilogue; mv, dot, tril/triu, diag; Cholesky
                     and LU of small matrices in registers (cholesky, inv, solve, slogdet)
    einsum.py        einsum as diagonal views, sums and bmm (host composition)
    shape.py         cat, flip, roll, repeat, repeat_interleave as strided copies
    indexing.py      gather, scatter(_reduce), index_select/add/copy/fill, take,
                     masked_fill/select/scatter, nonzero, x[idx] and x[idx] = v
    embedding.py     embedding (+ backward), one_hot
    softmax.py       softmax/log_softmax (+ backward): tiles of rows over a strided
                     [outer, N, inner] view
    losses.py        cross-entropy and nll_loss (+ backward), BCE with logits
    dropout.py       native_dropout
    random.py        multinomial: inverse-CDF and exponential-race sampling
    normalization.py layer_norm, rms_norm (+ backward) over tiles of rows; batch_norm,
                     group_norm: one norm kernel whose rows are laid out three ways
    conv.py          convolution (+ backward) as implicit GEMMs: windows gathered in the
                     K loop (no im2col buffer), any layout, autotuned tensor-core tiles
    fold.py          im2col (F.unfold), col2im (F.fold): the window gathers
    pooling.py       max/avg/adaptive pooling (+ backward)
    resample.py      nearest/bilinear upsampling (+ backward)
    padding.py       constant/reflect/replicate/circular padding (+ backward)
    bessel.py        tp.special's Bessel functions (ports of PyTorch's Cephes code) and
                     orthogonal polynomials (the recurrence as a loop); airy_ai, zeta on host
    special.py       the special functions (lgamma, digamma, erfinv, i0/i1, ndtri,
                     log_ndtr...) as pointwise expressions; polygamma and igamma on a
                     host copy (SciPy), logged
    _complex.py      complex tensors as (re, im) float pairs (Triton has no complex
                     type): the views of their parts, and the complex copy
    _indexing.py     the indexing kernels: gather / scatter / atomic-add walks, the
                     deterministic scatter-reduce, mask compaction, bounds checks
    _rows.py         the row kernels' launch heuristics (softmax, norms, losses): rows
                     per tile, num_warps, the persistent grid, the strided row view
    _spatial.py      what pooling.py, resample.py and padding.py share
    _math.py         the scalar math the expressions call
    _special_math.py the special functions' scalar math (Cephes fits, Chebyshev series)
    compile_check.py every kernel compiled for a real GPU, without one, as real launches
                     specialise it (recorded by _launch_record.py): its report is
                     COMPILE_REPORT.md (registers, spills, shared memory, tensor cores)

Without a GPU, set `TENSORPLAY_TRITON_INTERPRET=1`
(or `TRITON_INTERPRET=1`) and the same kernels run in Triton's interpreter on host
memory: slow, but every line can be stepped through with a debugger.
"""
# The registration file imports what registration needs, first, whatever submodule is
# asked for: the cuda device's state decides interpreter mode (TRITON_INTERPRET) before
# any @triton.jit function below is defined, and the declarations define the ops that the
# modules' own Library blocks register candidates for (linalg.py's aligned matmul). The
# kernels themselves import only tensorplay/kernel_support/ and the modules below it
# (tests/test_layering.py).
from tensorplay import _cuda_state  # noqa: F401
import tensorplay._generated.declarations  # noqa: F401


def source(op, rank=1):
    """The Triton source of an op's CUDA kernel: the `@triton.jit` functions its launcher
    runs (softmax, mm, ...), or the pointwise template's generated text for `rank`
    (triton_kernels/_kernel_source.py says how it is found). A pointwise expression's
    name (pointwise_expressions.py) works too. NoKernelError names an op without one.

        >>> print(triton_kernels.source("add"))
        >>> print(triton_kernels.source("softmax"))
    """
    from triton_kernels import _kernel_source, pointwise
    from tensorplay._generated.declarations import DISPATCH
    if op in pointwise.EXPRESSIONS:
        return pointwise.source(op, rank)
    return _kernel_source.source(op, DISPATCH.get("CUDA", ()), rank)
