"""The Triton backend: kernels registered for the CUDA dispatch key.

ops.yaml names them as `module.function` (`dispatch: {CUDA: pointwise.add}` is
`triton_kernels/pointwise.py:add`); tensorplay/_backend_loading.py registers them when
`triton` imports. Specialised extra candidates (the aligned matmul) register
themselves through a `tp.library.Library("CUDA", ...)` block in their module.

Each launcher follows the Triton tutorials: check -> allocate -> grid -> launch
(triton_kernels/_launch.py). The modules:

    _template.py     pointwise kernels generated from one template per arity
    pointwise_expressions.py  the expression table: every pointwise op as one
                     expression (arithmetic, math, logic, activations, random fills)
    pointwise.py     the launchers of those expressions (shape rule, dtype, launch)
    copy.py          copy_, fill_, clone, _to_copy (and the device -> host path)
    reduction.py     one reduction kernel: sum, mean, prod, max/min (+ indices)
    reduce_stats.py  amax/amin, all/any, var/std, norm, logsumexp, count_nonzero
    scan.py          cumsum, cumprod
    linalg.py        the blocked tl.dot matmul: mm, bmm (aligned and masked candidates)
    matrix.py        addmm, addmv, baddbmm, mv, dot, linear, tril/triu, diag
    shape_ops.py     cat, flip, roll, repeat, repeat_interleave as strided copies
    nn_fused.py      softmax/log_softmax (+ backward), cross-entropy and nll_loss
                     (+ backward), dropout: one program per row
    norm_fused.py    layer_norm, rms_norm (+ backward), batch_norm, group_norm: one norm
                     kernel whose rows are laid out three ways
    sorting.py       a stable rank sort (sort, topk, kthvalue, median, mode, unique),
                     cummax/cummin as an associative scan over (value, index)
    sampling.py      multinomial: inverse-CDF and exponential-race sampling
    einsum.py        einsum as diagonal views, sums and bmm (host composition)
    pool.py          max/avg/adaptive pooling (+ backward); _spatial.py holds what it
                     shares with resample.py (nearest/bilinear upsampling) and
                     padding.py (constant/reflect/replicate/circular, + backward)
    indexing.py      the indexing kernels: gather / scatter / atomic-add walks, the
                     deterministic scatter-reduce, mask compaction, bounds checks
    index_dim.py     gather, scatter(_reduce), index_select/add/copy/fill, take, embedding
    index_masked.py  masked_fill/select/scatter, nonzero, one_hot, repeat_interleave
    index_advanced.py  x[idx] and x[idx] = v (index.Tensor, index_put): linearised indices
    conv.py          convolution (+ backward): im2col / col2im gathers around the matmul
    fold.py          im2col (F.unfold), col2im (F.fold) on conv.py's kernels
    _math.py         the scalar math the expressions call
    compile_check.py every kernel compiled for a real GPU, without one

Without a GPU, set `TENSORPLAY_TRITON_INTERPRET=1`
(or `TRITON_INTERPRET=1`) and the same kernels run in Triton's interpreter on host
memory: slow, but every line can be stepped through with a debugger.
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
