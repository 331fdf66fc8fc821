"""The NumPy backend: kernels registered for the CPU dispatch key.

Each kernel does the arithmetic and nothing else: it gets TensorPlay tensors,
takes NumPy views of them (`t._impl.array()`, no copy), computes, and wraps the
result. ops.yaml names them as `module.function` (`pointwise.add` is
`cpu_kernels/pointwise.py:add`), one module per op family (tensorplay/codegen/families.py;
support modules start with `_`); tensorplay/_backend_loading.py registers them.
Argument checking lives in the ops' shape rules (tensorplay/meta/<family>.py), which a
kernel runs by the name ops.yaml's `meta:` gives them (`shape_rule("pooling.avg_pool2d")`);
the kernels import only tensorplay/kernel_support/ (the backends' view of the framework)
and the few modules below it, as tests/test_layering.py checks.
"""
