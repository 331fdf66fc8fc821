"""Shape and dtype rules: what an op's output looks like, computed without data.

They serve three purposes from one place: the Meta backend's kernels (tensors
with sizes and dtype but no memory), the typed errors for bad input (a kernel
that fails makes the registry ask the rule why), and output allocation for the
Triton backend.

Every op of ops.yaml runs on meta, in one of two ways: through a rule of its own
(`meta:` in ops.yaml), or, with none, through its Composite decomposition into ops
that have one (as PyTorch's CompositeImplicit ops do). Ops whose output is decided by
values (nonzero, masked_select, unique, equal: data_dependent.py) raise a
DataDependentError on meta, where PyTorch refuses them too. tests/test_meta.py walks
ops.yaml and proves each way by running it.
"""
