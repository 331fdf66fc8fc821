"""Layers import downward. Counting the imports made inside functions too, the largest
circle of modules that import each other stays small (MAX_KNOT); module-level imports
form no cycle at all; and the few function-local imports that still reach *up* are
listed in ALLOWED, each with its reason.

The layers, bottom to top (a module imports from its own layer and those below; the
exceptions are ALLOWED):

1. foundations: `errors`, `_dtype`, `_layout`, `_memory_format`, `_promotion`, `_storage`,
   `_cuda_state` (the cuda device's state), and the seam `_tensor_factory` (imports nothing)
2. dispatch: `dispatch/` (keys, thread-local masks, dispatcher, kernel registries, trace,
   tuning), `library`, `_generated/ops.py` and `declarations.py` (handles and schemas)
3. tensor internals: `_impl` (TensorImpl), `_device`, `_subclass`, and result layouts and
   memory overlap (`kernel_support/layout.py`, `overlap.py`)
4. autograd runtime: `autograd/` but `formulas/` (grad modes, nodes, saved variables,
   recording, the engine, Function, gradcheck): it makes tensors through the seam
5. front doors, shape rules and the kernel support layer: `_frontdoor`,
   `_generated/functional.py` and `tensor_methods.py`, `meta/` rules,
   `composite/scalar_ops.py`; `kernel_support/`, all the backends see of the framework
   (the input checks in it are the rules' too: `meta/` imports them from there)
6. the Tensor layer: `_tensor`, `_creation` (which fills the seam as it loads), and what
   they are built from (`_indexing`, `_formatting`, `_random`, `_device_transfer`, `sparse/`)
7. above the Tensor: the gradient formulas and the generated nodes and wrappers,
   `composite/`, `amp/`, `func/`, `nn/`, `optim/`, `utils/`, the profiler
8. the backends, `cpu_kernels/` and `triton_kernels/`: reached through the dispatcher,
   they import `kernel_support/` and the few low modules of BACKEND_IMPORTS, nothing else
   (their registration files: REGISTRATION_IMPORTS)
9. assembly: `_backend_loading` (registers the kernels), `cuda` (`tp.cuda`), `_api` (`tp.*`)

Where a low layer must call up, the layer above hands it the function, in one visible
place: `_creation` installs the Tensor class and the creation functions into
`_tensor_factory`; `tensorplay/func/__init__.py` gives the engine vmap's per-example
gradients (`engine.batched_grad`) and gradcheck vmap (`gradcheck.vmap`);
`func/random_under_vmap.py` gives `_random` vmap's randomness.

The graph is read from the source with `ast` (nothing is imported). An edge A -> B means
importing A runs B first: a module-level import in A of module B (a `from pkg import
name` names the submodule `pkg.name` when there is one), plus every package above B
that is not also above A (its `__init__` runs first too). A package `__init__` therefore
stays light where low modules live in the package.

A function-local import A -> B is *upward* when B already reaches A through module-level
imports: written at module level it would close a cycle. Those, and any function-local
import of the Tensor layer (`_tensor`, `_creation`), must be in ALLOWED.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("tensorplay", "cpu_kernels", "triton_kernels")
TENSOR_LAYER = ("tensorplay._tensor", "tensorplay._creation")

# The most modules one import circle may hold, function-local imports counted. The
# circles left: the dispatcher, the kernel registry and trace (3), recording and
# inplace_views (2).
MAX_KNOT = 15

# (importer, imported): why the import stays inside a function
ALLOWED = {
    ("tensorplay.nn.modules.rnn", "tensorplay.nn.utils"):
        "the RNN layers take a PackedSequence (nn/utils/rnn.py), and tp.nn.utils builds on "
        "the modules (its parametrizations are Modules), as in PyTorch",
    ("tensorplay.nn.utils.stateless", "tensorplay.func"):
        "the deprecated nn.utils.stateless.functional_call forwards to tp.func's, which "
        "builds on tp.nn (stack_module_state, the batch-norm replacement)",
    ("tensorplay.autograd.recording", "tensorplay.autograd.inplace_views"):
        "inplace_views is built on recording; recording reaches it only when an "
        "in-place op rewrites a view's history",
    ("tensorplay.dispatch.trace", "tensorplay.dispatch.dispatcher"):
        "the dispatcher reports every hop through trace; trace reads the dispatcher "
        "only while explaining a call",
    ("tensorplay.dispatch.trace", "tensorplay.dispatch.kernel_selection"):
        "the kernel registry reports its choice through trace; trace reads the "
        "registry only while explaining a call",
    ("tensorplay.distributed.process_group", "tensorplay.distributed.work"):
        "a Work waits on the process group's collectives; barrier(async_op=True), in the "
        "group module, hands one back",
}


# What a backend's kernel module may import of tensorplay (module-level or inside a
# function): the kernel support layer, and modules that import nothing above the
# dispatcher (the ones that make tensors do it through the seam).
BACKEND_IMPORTS = {
    "tensorplay.kernel_support": "the kernel support layer: the backends' whole view",
    "tensorplay.errors": "the typed errors a kernel raises",
    "tensorplay._dtype": "dtypes",
    "tensorplay._device": "devices (the CPU device, `as_device`)",
    "tensorplay._memory_format": "memory formats (channels_last)",
    "tensorplay._promotion": "PyTorch's type promotion",
    "tensorplay._cuda_state": "the cuda device's state (interpreter mode, its memory as torch)",
    "tensorplay._device_transfer": "host arrays onto a device and back (made through the seam)",
    "tensorplay._random": "the generators (a CPU generator, the cuda device's Philox inputs)",
    "tensorplay._random_draws": "how a CPU kernel draws from a generator",
    "tensorplay._fma": "exact fused multiply-adds (the random fills' and kernels' own)",
    "tensorplay.library": "`@kernel` and the Library blocks of extra candidates",
    "tensorplay.dispatch.plan_cache": "plans kept per shape",
    "tensorplay.dispatch.trace": "a launch reported to explain() as a hop",
    "tensorplay.dispatch.autotune": "launch configurations measured per shape bucket",
}
# A backend's one registration file (its package __init__) may import what registration
# needs, before any kernel module loads.
REGISTRATION_IMPORTS = {
    "cpu_kernels": {},
    "triton_kernels": {
        "tensorplay._cuda_state": "decides interpreter mode before any @triton.jit function",
        "tensorplay._generated.declarations": "defines the ops its Library blocks register for",
    },
}

def _modules():
    """{module name: path} for every .py file of the packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _known(name):
    """The longest prefix of `name` that is one of our modules (None: not ours)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module, node):
    """The modules an import statement in `module` runs: the imported ones and the
    packages above them that are not above `module`."""
    is_package = MODULES[module].name == "__init__.py"
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module if is_package else module.rpartition(".")[0]
            parts = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                 for a in node.names]
    out = set()
    for target in filter(None, map(_known, names)):
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            above = ".".join(parts[:i])
            if not (module == above or module.startswith(above + ".")):
                out.add(above)
    return out


def _imports(module):
    """(module-level targets, [(target, line) of function-local imports])."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    top, local = set(), []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                targets = _targets(module, child)
                if in_function:
                    local.extend((t, child.lineno) for t in targets)
                else:
                    top.update(targets)
            inner = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, False)
    return top, local


IMPORTS = {m: _imports(m) for m in MODULES}
GRAPH = {m: top for m, (top, _) in IMPORTS.items()}


def _reach(start):
    seen, todo = {start}, [start]
    while todo:
        for nxt in GRAPH.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _find_cycle():
    """One cycle of the module-level graph as a list of modules, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(GRAPH, WHITE)
    for root in sorted(GRAPH):
        if color[root] != WHITE:
            continue
        stack = [(root, iter(sorted(GRAPH[root])))]
        path = [root]
        color[root] = GREY
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                color[node] = BLACK
                stack.pop()
                path.pop()
            elif color[child] == GREY:
                return path[path.index(child):] + [child]
            elif color[child] == WHITE:
                color[child] = GREY
                stack.append((child, iter(sorted(GRAPH[child]))))
                path.append(child)
    return None


def _graph_with_local_imports():
    """GRAPH plus the function-local imports: what a module may import while it runs."""
    return {m: top | {t for t, _ in local if t != m} for m, (top, local) in IMPORTS.items()}


def _knots(graph):
    """The strongly connected components of `graph` (Tarjan's algorithm, with an explicit
    stack): lists of modules that all reach each other, largest first."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:                   # every child seen: is node a root?
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    knot = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        knot.append(member)
                        if member == node:
                            break
                    found.append(sorted(knot))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found, key=len, reverse=True)


def _upward_local_imports():
    """{(importer, imported): [line, ...]} of the function-local imports that must be
    allowed: upward ones, and any of the Tensor layer."""
    found = {}
    for module, (_, local) in IMPORTS.items():
        for target, line in local:
            if target == module:
                continue
            upward = module in _reach(target)
            if upward or (target in TENSOR_LAYER and module not in TENSOR_LAYER):
                found.setdefault((module, target), []).append(line)
    return found


def test_the_graph_sees_the_packages():
    assert len(MODULES) > 200
    assert GRAPH["tensorplay._tensor_factory"] == set()     # the seam imports nothing
    # a known module-level edge, and the package edge that comes with it
    assert {"tensorplay._tensor", "tensorplay.autograd", "tensorplay.autograd.grad_mode"} <= \
        GRAPH["tensorplay._creation"]


def test_module_level_imports_form_no_cycle():
    cycle = _find_cycle()
    assert cycle is None, "module-level import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_a_cycle():
    saved = dict(GRAPH)
    try:
        GRAPH["tensorplay._impl"] = GRAPH["tensorplay._impl"] | {"tensorplay._creation"}
        cycle = _find_cycle()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert "tensorplay._impl" in cycle and "tensorplay._creation" in cycle


def test_upward_function_local_imports_are_the_allowed_ones():
    found = _upward_local_imports()
    unexpected = {k: v for k, v in found.items() if k not in ALLOWED}
    assert not unexpected, (
        "function-local imports that reach up (a module-level import would close a "
        "cycle) or into the Tensor layer; build tensors through "
        "tensorplay/_tensor_factory.py, or add the pair to ALLOWED with its reason:\n" +
        "\n".join(f"  {MODULES[a].relative_to(ROOT)}:{lines} imports {b}"
                  for (a, b), lines in sorted(unexpected.items())))
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"ALLOWED lists imports that are gone (remove them): {stale}"


def test_no_knot_of_modules_importing_each_other():
    knots = _knots(_graph_with_local_imports())
    largest = knots[0]
    assert len(largest) <= MAX_KNOT, (
        f"{len(largest)} modules import each other (function-local imports counted), "
        f"more than {MAX_KNOT}: move a function to the layer it belongs to, or let the "
        f"layer above hand the low module what it needs; the circle:\n  " +
        "\n  ".join(largest))


def test_knot_finder_finds_knots():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert _knots(graph) == [["a", "b", "c"], ["d", "e"], ["f"]]


def test_the_tensor_layer_fills_the_seam_as_it_loads():
    assert IMPORTS["tensorplay._tensor_factory"] == (set(), [])   # not even in a function
    code = ("import sys\n"
            "from tensorplay import _tensor_factory as factory\n"
            "try:\n"
            "    factory.zeros\n"
            "except AttributeError as e:\n"
            "    assert 'not installed yet' in str(e), e\n"
            "else:\n"
            "    raise AssertionError('the seam was filled before the Tensor layer loaded')\n"
            "assert 'tensorplay._creation' not in sys.modules\n"
            "import tensorplay._creation as c, tensorplay._tensor as t\n"
            "assert factory.zeros is c.zeros and factory.wrap is t.wrap\n"
            "assert type(factory.zeros(2)) is t.Tensor\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr


def test_a_subpackage_imports_first_in_a_fresh_interpreter():
    # tensorplay.export reaches tensorplay.nn, whose modules say `import
    # tensorplay.nn.functional as F` while tensorplay.nn is still loading; the package's
    # lazy __getattr__ must answer with that module, not load _api (which imports
    # tensorplay.export again, half-built).
    code = "import tensorplay as tp\nfrom tensorplay.export import Dim\nassert tp.tensor([1.0]).shape == (1,)\n"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr


def test_the_seam_offers_what_it_names():
    from tensorplay import _creation, _tensor
    from tensorplay import _tensor_factory as factory
    for name in factory.TENSOR:
        assert getattr(factory, name) is getattr(_tensor, name)
    for name in factory.CREATION:
        assert getattr(factory, name) is getattr(_creation, name)


def test_a_pickled_tensor_loads_without_the_creation_functions():
    # Unpickling imports only tensorplay._tensor, not _creation (which fills the seam).
    import pickle

    import tensorplay as tp
    data = pickle.dumps(tp.tensor([[1.0, 2.0]], requires_grad=True))
    code = ("import pickle\n"
            f"t = pickle.loads({data!r})\n"
            "assert t.requires_grad and t.shape == (1, 2) and t.dtype.name == 'float32'\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr


def test_the_func_package_hands_the_engine_vmaps_gradients():
    from tensorplay.autograd import engine
    from tensorplay.func import batched_grad     # (importing tensorplay.func installs it)
    assert engine.batched_grad is batched_grad.batched_grad


def test_the_func_package_hands_gradcheck_vmap():
    from tensorplay.func import vmap             # (importing tensorplay.func installs it)
    assert sys.modules["tensorplay.autograd.gradcheck"].vmap is vmap


def _tensorplay_imports(module):
    """[(imported tensorplay module, line, the statement)] of every import in `module`,
    module-level and function-local; `from tensorplay import _dtype` imports
    `tensorplay._dtype`."""
    path = MODULES[module]
    source = path.read_text()
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES
                     else node.module for alias in node.names]
        else:
            continue
        text = ast.get_source_segment(source, node)
        found += [(target, node.lineno, text) for target in dict.fromkeys(names)
                  if target.split(".")[0] == "tensorplay"]
    return found


def _allowed(target, allowed):
    return any(target == name or target.startswith(name + ".") for name in allowed)


def test_backends_import_only_the_kernel_support_layer_and_the_modules_below_it():
    """cpu_kernels/ and triton_kernels/ are leaves: no front door, no shape-rule module of
    tensorplay.meta, no Tensor class, no autograd, no composite, no tp.cuda. What a kernel
    needs of the framework is in tensorplay/kernel_support/."""
    wrong = []
    for module in sorted(MODULES):
        package = module.split(".")[0]
        if package not in ("cpu_kernels", "triton_kernels"):
            continue
        allowed = REGISTRATION_IMPORTS[package] if module == package else BACKEND_IMPORTS
        for target, line, text in _tensorplay_imports(module):
            if not _allowed(target, allowed):
                wrong.append(f"  {MODULES[module].relative_to(ROOT)}:{line}: {text}")
    assert not wrong, (
        "a backend module imports what is not its to import; use tensorplay/kernel_support/ "
        "(or add a low module to BACKEND_IMPORTS with its reason):\n" + "\n".join(wrong) +
        "\nallowed: " + ", ".join(sorted(BACKEND_IMPORTS)))


def test_the_backend_import_check_reads_every_import():
    # Function-local imports count, and `from tensorplay import _dtype` is tensorplay._dtype.
    found = {target for target, _, _ in _tensorplay_imports("triton_kernels.random")}
    assert {"tensorplay._dtype", "tensorplay.kernel_support.ops"} <= found
    local = {target for target, _, _ in _tensorplay_imports("triton_kernels._launch_record")}
    assert "tensorplay.dispatch.autotune" in local      # imported inside recording() only
    assert _allowed("tensorplay.kernel_support.checks", BACKEND_IMPORTS)
    assert not _allowed("tensorplay.meta.pointwise", BACKEND_IMPORTS)
    assert not _allowed("tensorplay._generated.functional", BACKEND_IMPORTS)


def test_the_kernel_support_layer_stays_below_what_it_serves():
    """The support layer sits below the shape rules (tensorplay/meta/ imports its checks)
    and the Tensor layer: it imports none of them, nor the backends it serves."""
    above = ("tensorplay.meta", "tensorplay._generated.functional", "tensorplay._tensor",
             "tensorplay._creation", "tensorplay.composite", "tensorplay.cuda",
             "tensorplay._backend_loading", "tensorplay._api", "cpu_kernels", "triton_kernels")
    wrong = [f"  {MODULES[m].relative_to(ROOT)}:{line}: {text}"
             for m in sorted(MODULES) if m.startswith("tensorplay.kernel_support")
             for target, line, text in _tensorplay_imports(m) if _allowed(target, above)]
    assert not wrong, "the kernel support layer imports a layer above it:\n" + "\n".join(wrong)

def test_cuda_keeps_its_public_names():
    import tensorplay as tp
    for name in ("is_available", "is_interpreted", "device_count", "triton_available",
                 "allocate", "synchronize", "manual_seed", "manual_seed_all", "initial_seed",
                 "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
                 "from_host", "to_host", "as_torch", "from_dlpack", "source"):
        assert callable(getattr(tp.cuda, name)), name
