"""Shape and dtype rules: what an op's output looks like, computed without data.

They serve three purposes from one place: the Meta backend's kernels (tensors
with sizes and dtype but no memory), the typed errors for bad input (a kernel
that fails makes the registry ask the rule why), and output allocation for the
Triton backend.
"""
