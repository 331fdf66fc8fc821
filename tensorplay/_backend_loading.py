"""Backend loading: the one place that turns ops.yaml's `dispatch:` names into
registered kernels.

Each key's kernels live in a package; `dispatch: {CPU: pointwise.add}` means
`cpu_kernels.pointwise.add`. Adding a backend is a new package and a line in
BACKENDS, not an edit across the core.
"""
from __future__ import annotations

import importlib

from tensorplay import _cuda_state
from tensorplay._generated.declarations import DERIVED, DISPATCH, META_RULES
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import AUTOGRAD_OFFSET, NUM_BACKENDS, DispatchKey
from tensorplay.dispatch.python_key import key_set_of
from tensorplay.library import Library

BACKENDS = {
    "Composite": "tensorplay.composite",
    "CPU": "cpu_kernels",
    "CUDA": "triton_kernels",
    "Sparse": "tensorplay.sparse",
}

loaded = set()


def resolve(package, dotted):
    module_name, _, fn_name = dotted.rpartition(".")
    module = importlib.import_module(f"{package}.{module_name}" if module_name else package)
    try:
        return getattr(module, fn_name)
    except AttributeError:
        raise ImportError(f"ops.yaml names kernel '{dotted}' but {module.__name__} has no "
                          f"'{fn_name}'") from None


def load_backend(key):
    """Register every kernel ops.yaml assigns to `key` (idempotent)."""
    if key in loaded:
        return
    package = BACKENDS[key]
    lib = Library(key, f"{package} (ops.yaml)")
    for op, name in DISPATCH.get(key, ()):
        lib.impl(op, resolve(package, name), name=f"{package}.{name}")
    loaded.add(key)


def load_derived():
    """The kernels of ops.yaml's `alias_of:` and `copy_of:` entries, at the Composite key:
    `arccos` (alias_of: acos) calls acos with the arguments it was given (the two
    schemas are the same, as the code generator checked), and `permute_copy` (copy_of:
    permute) calls permute, then copies the view into new contiguous memory, as
    PyTorch's generated `*_copy` kernels do. Run above autograd like every Composite
    kernel, they record nothing themselves: the ops they call do."""
    lib = Library("Composite", "generated (ops.yaml alias_of: / copy_of:)")
    for op, (key, target) in DERIVED.items():
        make = alias_kernel if key == "alias_of" else copy_kernel
        lib.impl(op, make(op, target), name=f"{key} {target}")


def alias_kernel(op, target):
    handle = dispatcher.find(target)

    def alias(*args):
        return handle.call(key_set_of(args), *args)
    alias.__qualname__ = alias.__name__ = op.split(".")[0]
    return alias


def copy_kernel(op, target):
    from tensorplay._generated.functional import clone
    from tensorplay._memory_format import contiguous_format
    handle = dispatcher.find(target)

    def copy(*args):
        view = handle.call(key_set_of(args), *args)
        if isinstance(view, (list, tuple)):      # split_copy, unbind_copy: one copy a view
            return type(view)(clone(v, memory_format=contiguous_format) for v in view)
        return clone(view, memory_format=contiguous_format)
    copy.__qualname__ = copy.__name__ = op.split(".")[0]
    return copy


def load_meta():
    from tensorplay._generated.op_tags import OP_TAGS
    from tensorplay.kernel_support import overlap
    from tensorplay.kernel_support.ops import install_rules
    from tensorplay.meta import rules
    from tensorplay.meta.backend import LAYOUTS, make_meta_kernel, make_validator, \
        pointwise_layout, refusing_complex
    lib = Library("Meta", "shape rules (ops.yaml meta:)")
    by_name = {}
    for op, rule_name in META_RULES.items():
        # `binary` is tensorplay/meta/rules.py:binary; `shape.cat` is tensorplay/meta/shape.py:cat
        rule = resolve("tensorplay.meta", rule_name) if "." in rule_name else \
            getattr(rules, rule_name)
        by_name[rule_name] = rule
        handle = dispatcher.find(op)
        # Results of pointwise ops (and clone's, _to_copy's) take their inputs' layout; their
        # in-place forms (and copy_) refuse overlapping memory (kernel_support/overlap.py), as
        # on the CPU.
        tags = OP_TAGS.get(op, ())
        pointwise = "pointwise" in tags or op in ("clone", "_to_copy") or op in LAYOUTS
        layout = pointwise_layout(handle) if pointwise else None
        overlap_check = None
        if op == "copy_":
            overlap_check = overlap.check_copy_overlap
        elif "pointwise" in tags and "inplace" in tags:
            overlap_check = overlap.check_inplace_overlap
        checked = refusing_complex(handle, rule)    # no complex where PyTorch has none
        lib.impl(op, make_meta_kernel(handle, checked, layout, overlap_check),
                 name=f"tensorplay.meta.rules.{rule_name}")
        handle.meta_rule = make_validator(handle, checked)
    # The kernels run the rules by these names too (shape_rule in kernel_support/ops.py),
    # without importing tensorplay.meta.
    install_rules(by_name, META_RULES)


def load_autograd():
    """The generated wrappers at every autograd key; at the autograd keys of the dense
    backends, the fallback of an op with none (and no Composite decomposition): a grad_fn
    that raises in backward instead of a silently detached result
    (tensorplay/autograd/not_implemented.py). AutogradSparse holds the sparse
    decompositions instead (load_sparse)."""
    from tensorplay._generated.autograd_wrappers import WRAPPERS
    from tensorplay.autograd.not_implemented import not_implemented_fallback
    for backend in range(NUM_BACKENDS):
        lib = Library(DispatchKey(backend + AUTOGRAD_OFFSET), "generated autograd wrappers")
        for op, wrapper in WRAPPERS.items():
            lib.impl(op, wrapper, name=f"tensorplay._generated.autograd_wrappers."
                                        f"{wrapper.__name__}")
    dense = tuple(backend + AUTOGRAD_OFFSET for backend in range(NUM_BACKENDS)
                  if backend != DispatchKey.Sparse)
    dispatcher.register_fallback(dense, not_implemented_fallback)


def load_sparse():
    """The sparse kernels are decompositions into differentiable dense ops on a tensor's
    values (tensorplay/sparse/coo.py), so besides the Sparse key they fill the
    AutogradSparse slot, where they run above autograd like a Composite kernel. Called
    after load_autograd: they replace the generated wrappers there."""
    load_backend("Sparse")
    lib = Library(DispatchKey.AutogradSparse, "sparse decompositions (ops.yaml Sparse:)")
    for op, name in DISPATCH.get("Sparse", ()):
        lib.impl(op, _above_autograd(resolve(BACKENDS["Sparse"], name)),
                 name=f"{BACKENDS['Sparse']}.{name}")


def _above_autograd(kernel):
    def sparse_decomposition(ks, *args):
        return kernel(*args)
    sparse_decomposition.kernel = kernel
    return sparse_decomposition


def load_autocast():
    """The generated autocast wrappers, at AutocastCPU and AutocastCUDA (ops.yaml autocast:)."""
    from tensorplay._generated.autocast_wrappers import WRAPPERS
    for key, wrappers in WRAPPERS.items():
        lib = Library(key, "generated autocast wrappers")
        for op, wrapper in wrappers.items():
            lib.impl(op, wrapper, name=f"tensorplay._generated.autocast_wrappers."
                                        f"{wrapper.__name__}")


def load_default():
    load_backend("Composite")
    load_derived()
    load_backend("CPU")
    if _cuda_state.triton_available():     # the Triton backend serves the `cuda` device
        load_backend("CUDA")
    load_meta()
    load_autograd()
    load_sparse()
    load_autocast()
