"""The kernel support layer: the backends' whole view of the framework.

A kernel of cpu_kernels/ or triton_kernels/ imports from the modules of this package and
from a few modules at the bottom of the framework (errors, dtypes, devices, memory
formats, type promotion, the `cuda` device's state, the generators, `library` for
`@kernel`, the plan cache, explain()'s hops), never from the layers above: no front door,
no module of tensorplay/meta/, no Tensor class, no autograd, no composite, no `tp.cuda`.
tests/test_layering.py checks it, and keeps this package below what it serves. Each
name says why a kernel needs it; import it from the module that holds it
(`from tensorplay.kernel_support.checks import broadcast`).

results.py    making the tensors a kernel returns
    factory             the seam tensors are made through: factory.empty_strided(...),
                        factory.wrap(impl), factory.Tensor (cpu_kernels' out(), one frame)
    tensor_from_array   a NumPy array as a new row-major tensor
    TensorImpl, Storage, VersionCounter, PLAIN_KEYS
                        an impl built by hand: a view of existing memory, a CPU result
    contiguous_strides, is_contiguous_layout, numel_of
                        the arithmetic of a row-major layout
    check_alloc         refuse a result too large to allocate before asking for memory
    grad_state          the thread's grad state: inside inference_mode, `.inference`
layout.py, einsum.py    which strides a result gets
    clone_strides, copy_strides, pointwise_strides, index_strides, unique_dim_strides,
    einsum_strides, lapack_strides
                        PyTorch's result layouts, so a later `.contiguous()` copies
                        exactly when PyTorch's would
    parse_einsum        einsum's equation, parsed as its shape rule and backward parse it
overlap.py    in-place writes
    check_inplace_overlap, is_same_data
                        refuse a write whose result would depend on the order of writes
checks.py     the input checks kernels raise, with the shape rules' messages (the rules
              of tensorplay/meta/ import them from here)
    SELF                what an in-place op's rule returns (OutSpec and DataDependent,
                        a rule's other answers, are there too)
    wrap_dim, reduce_dim_list, broadcast, check_devices
    binary, binary_inplace, check_inplace_cast
                        a broadcasting op's result; an in-place one's fits `self` and casts
    reject_bool, check_mean_dtype, check_nonempty_reduction, check_nonempty_dim
    check_in_range, check_masked_scatter_count, is_mask
                        index values, which only a kernel has
arguments.py  what a family's rule and its kernels both read
    window_out_size, pool_params, conv_output_sizes, upsample_params, scatter_params,
    cat_inputs, check_repeats_tensor, reduced_sizes, integral_to_long, machine_eps
lapack.py     LAPACK's routines on NumPy stacks of matrices (the CPU kernels, and the
              `cuda` kernels' host copies)
    inv_ex, slogdet, solve, solve_arrays, cholesky_ex
                        the factorizations, with LAPACK's info per matrix
    solve_is_vector     linalg.solve's rule for a right-hand side of vectors
    check_info, INV_FAILED, CHOLESKY_FAILED
                        LinAlgError for the first bad matrix, in PyTorch's words
ops.py        other ops
    shape_rule, shape_rule_of
                        a shape rule, by the name ops.yaml's `meta:` gives it or by its
                        op: a result's sizes and dtype, the typed error for bad input
    schema_of           an op's argument names, tensor and written arguments (the
                        Triton launchers made from a schema)
    call_below_autograd run another op below autograd, through the dispatcher (a Triton
                        launcher that sums or compares, the CPU's half-type optimizer step)

Its modules import the dispatcher and what lies below it, and `_frontdoor`'s wrap_dim.
"""
