"""The op families: one short name per family, spelled the same in every tree.

An op's pieces live in modules named for its family, whichever tree they are in:

    tree                                  module of family F
    cpu_kernels/                          F.py          NumPy kernels (ops.yaml `CPU:`)
    triton_kernels/                       F.py          Triton kernels (`CUDA:`)
    tensorplay/composite/                 F.py          ops written with ops (`Composite:`)
    tensorplay/meta/                      F.py          shape/dtype rules (`meta:`)
    tensorplay/func/batching_rules/       F.py          vmap's batching rules (`vmap:`)
    tensorplay/autograd/formulas/         F.py          helpers of derivatives.yaml formulas
    tensorplay/nn/                        _functional_F.py   tp.nn.functional's own code
    tests/opinfo/                         db_F.py       the OpInfo entries

so `max_pool2d_with_indices` has cpu_kernels/pooling.py, triton_kernels/pooling.py,
tensorplay/meta/pooling.py, tensorplay/autograd/formulas/pooling.py,
tensorplay/nn/_functional_pooling.py and tests/opinfo/db_pooling.py, and its ops.yaml
entry names each piece. A family need not have a module in every tree (most ops of
`views` are Composite only). Modules that are not a family start with `_` (support:
`cpu_kernels/_common.py`) or are listed in SUPPORT below. tp.nn's layer modules keep
PyTorch's public names (NN_MODULES), since scripts import them.

tests/test_families.py walks ops.yaml and the trees and keeps all of this true.
"""
from __future__ import annotations

# family -> what it holds
FAMILIES = {
    "pointwise": "elementwise arithmetic and math: + - * / ** (and their Scalar overloads), "
                 "comparisons, where, maximum/minimum, xlogy, the float functions (exp, "
                 "log, trig, erf...), rounding, the division family, clamp, lerp, addcmul, "
                 "nan_to_num, relu (the hot path of every model, beside the operators)",
    "logic": "isnan/isinf/isfinite, isclose/allclose/equal, logical_* and bitwise_* ops",
    "activations": "the nonlinearities of nn: leaky_relu, elu, gelu, silu, mish, softplus, "
                   "hardtanh... and their backward ops",
    "random": "draws from a tp.Generator: normal_, uniform_, exponential_, bernoulli, "
              "multinomial",
    "dropout": "native_dropout, dropout, the channel-wise and alpha dropouts",
    "reduction": "sum, mean, prod, max/min, argmax, amax, var/std, norm, logsumexp, "
                 "all/any, count_nonzero, the NaN-skipping and covariance helpers",
    "scan": "cumsum, cumprod, diff and the cumulative trapezoid",
    "sorting": "sort, argsort, topk, kthvalue, median, mode, cummax/cummin, unique, "
               "searchsorted, bucketize, isin",
    "linalg": "matrix products (mm, bmm, matmul, mv, dot, addmm, linear, ...), "
              "tril/triu, diag, trace, kron, the tp.linalg norms, inverses, "
              "determinants, solves and factorizations (LAPACK)",
    "triangular": "triangular factorizations and solves: LU (lu_factor, lu, lu_solve, "
                  "lu_unpack), LDL, solve_triangular / triangular_solve, solve_ex, "
                  "cholesky_solve / cholesky_inverse (SciPy's LAPACK)",
    "qr": "QR, Householder reflections and least squares: qr, geqrf, "
          "householder_product / orgqr, ormqr, lstsq",
    "eigen": "the SVD and the symmetric eigendecomposition, and what is built on them: "
             "svdvals, pinv, matrix_rank, cond, det (LAPACK)",
    "fft": "the discrete Fourier transform: the three transforms (_fft_r2c, _fft_c2r, "
           "_fft_c2c) and the tp.fft functions composed of them, fftshift, stft / istft",
    "einsum": "einsum: parsing the equation, the result's layout, the kernels",
    "views": "ops that return a view: view, reshape, transpose, permute, expand, squeeze, "
             "select, slice, split, movedim, unfold, ... and their in-place forms",
    "shape": "ops that rearrange by copying: cat, stack, flip, roll, repeat, tile, "
             "repeat_interleave, atleast_*, meshgrid, block_diag, ...",
    "copy": "copy_, fill_, zero_, clone, _to_copy, to(...) and the dtype shorthands",
    "indexing": "gather/scatter, take, index_select/add/copy/fill, masked_*, nonzero, "
                "advanced indexing (x[idx], index_put)",
    "embedding": "embedding (rows of a table picked by index), its backward, one_hot",
    "conv": "convolution and its backward (conv1d ... conv_transpose3d)",
    "pooling": "max, average, adaptive, fractional and power-average pooling (1-D to 3-D), "
               "max unpooling",
    "padding": "constant, reflect, replicate and circular padding",
    "resample": "upsampling (nearest, bilinear), interpolate, pixel and channel shuffle",
    "fold": "im2col / col2im (F.unfold, F.fold)",
    "normalization": "batch, layer, group, instance and RMS norm, local response norm, "
                     "normalize",
    "softmax": "softmax, log_softmax, softmin and their backward ops, gumbel_softmax",
    "losses": "nll_loss, cross_entropy, mse, l1, huber, BCE, KL, margin and the other "
              "losses",
    "attention": "scaled_dot_product_attention, MultiheadAttention",
    "distance": "cosine_similarity, pairwise_distance, pdist, cdist, dist",
    "rnn": "the LSTM and GRU recurrences (_lstm_sequence, _gru_sequence) and the RNN layers",
    "optim": "the fused optimizer steps (_fused_adam_, _fused_sgd_)",
    "bessel": "tp.special's Bessel and Airy functions, the Hurwitz zeta function and the "
              "orthogonal polynomials (Chebyshev, Hermite, Laguerre, Legendre)",
    "complex": "complex numbers: view_as_real / view_as_complex, real, imag, conj, "
               "complex, polar (the views of a complex tensor's parts)",
    "special": "the special functions of tp.special: the gamma family (lgamma, digamma, "
               "polygamma, mvlgamma, igamma), erfinv, the modified Bessel functions i0/i1, "
               "the normal distribution's ndtr/ndtri/log_ndtr, erfcx, entr, xlog1py",
}

# Modules of a tree that are not a family and do not start with `_`: the machinery the
# families share (named for their role). Triton's pointwise.py launches every elementwise
# op (pointwise, logic, activations, random) from one template and one expression table,
# pointwise_expressions.py, so those families have no Triton module of their own.
SUPPORT = {
    "triton_kernels": ("compile_check", "pointwise_expressions"),
    "tensorplay/meta": ("backend", "layout", "overlap", "rules"),
    "tensorplay/autograd/formulas": ("core", "forward"),
    "tests/opinfo": ("core", "samples", "reduction_common", "indexing_errors", "complex_errors"),
}

# tp.nn's layer modules (tensorplay/nn/modules/): PyTorch's public module names, with the
# family each holds; module.py, container.py, linear.py, flatten.py and transformer.py hold
# the building blocks, not an op family; utils.py a checkpoint helper.
NN_MODULES = {
    "activation": "activations",      # and Softmax, as in torch.nn.modules.activation
    "attention": "attention",
    "conv": "conv",
    "distance": "distance",
    "dropout": "dropout",
    "fold": "fold",
    "loss": "losses",
    "normalization": "normalization",
    "padding": "padding",
    "pixelshuffle": "resample",
    "pooling": "pooling",
    "rnn": "rnn",
    "sparse": "embedding",
    "upsampling": "resample",
}
NN_BUILDING_BLOCKS = ("module", "container", "linear", "flatten", "transformer", "utils")
# PyTorch's paths for layers defined in a family's module here (batchnorm.py re-exports
# normalization.py's BatchNorm*): importable where scripts import them, nothing of their own
NN_PATH_ALIASES = {"adaptive": "losses", "batchnorm": "normalization",
                   "channelshuffle": "resample", "instancenorm": "normalization",
                   "linear_cross_entropy_options": "losses"}
