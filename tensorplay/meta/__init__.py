"""Shape and dtype rules: what an op's output looks like, computed without data.

They serve three purposes from one place: the Meta backend's kernels (tensors
with sizes and dtype but no memory), the typed errors for bad input (a kernel
that fails makes the registry ask the rule why), and output allocation for the
Triton backend.

Every op of ops.yaml runs on meta, in one of two ways: through a rule of its own
(`meta:` in ops.yaml), or, with none, through its Composite decomposition into ops
that have one (as PyTorch's CompositeImplicit ops do). Ops whose output is decided by
values (nonzero, masked_select, unique, equal) have rules that return DataDependent:
they raise a DataDependentError on meta, where PyTorch refuses them too.
tests/test_meta.py walks ops.yaml and proves each way by running it.

    rules.py      the contract every rule follows, the helpers they share, and the rules
                  of the most common ops (arithmetic, comparisons, sum/mean/max, mm,
                  copies), which ops.yaml names bare (`meta: binary`)
    <family>.py   the rules of one op family (pooling.py, indexing.py...; the families
                  are listed in tensorplay/codegen/families.py), named `family.rule`
    _nn.py, _spatial.py   the checks the nn and the spatial families share
    backend.py    the Meta backend: a rule turned into a kernel of empty tensors

What the kernels use too lives below, in tensorplay/kernel_support/ (the backends' view
of the framework), and the rules import it from there: the generic checks (`broadcast`,
`check_devices`, `binary`, in-place fits and casts), result strides (`layout.py`), the
memory overlap of in-place writes (`overlap.py`), einsum's parser, and the arguments a
family's rule and kernels both read (`pool_params`, ...). The kernels reach the rules
themselves by the names ops.yaml gives them (`kernel_support.shape_rule`).
"""
