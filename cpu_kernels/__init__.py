"""The NumPy backend: kernels registered for the CPU dispatch key.

Each kernel does the arithmetic and nothing else: it gets TensorPlay tensors,
takes NumPy views of them (`t._impl.array()`, no copy), computes, and wraps the
result. ops.yaml names them as `module.function` (`pointwise.add` is
`cpu_kernels/pointwise.py:add`), one module per op family (tensorplay/codegen/families.py;
support modules start with `_`); tensorplay/_backend_loading.py registers them.
Argument checking lives in the ops' shape rules (tensorplay/meta/<family>.py, imported
as `rules`).
"""
