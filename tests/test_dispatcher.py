"""The dispatcher: keys, key sets, the dispatch table, and the second-level registry.

Ops used here are defined by the tests themselves (`test.*` names), so registering
kernels on them never disturbs the real operators.
"""
import itertools
import subprocess
import sys

import pytest

import tensorplay as tp
from tensorplay.dispatch import DispatchKey, DispatchKeySet, explain
from tensorplay.dispatch import keys as K
from tensorplay.dispatch.dispatcher import Dispatcher, OpSchema, dispatcher
from tensorplay.dispatch.kernel_selection import ShapeRule, enable_device_fallback, registry_version
from tensorplay.dispatch.tls import ExcludeKeys, IncludeKeys, local_keys
from tensorplay.errors import ArgumentError, KernelConstraintError, NoKernelError

_counter = itertools.count()


def new_op(arg_names=("self",), tensors=(0,), mutable=()):
    """A fresh unary-ish op with a unique name, defined only for one test."""
    name = f"test.op{next(_counter)}"
    return dispatcher.define(OpSchema(name, f"{name}(...)", arg_names, tensors, (), mutable))


def call(handle, *args):
    ks = 0
    for a in args:
        if hasattr(a, "_impl"):
            ks |= a._impl.key_set()
    return handle.call(ks, *args)


# ---- keys ---------------------------------------------------------------------------
def test_key_values_are_fixed():
    expected = dict(CPU=0, CUDA=1, Vulkan=2, Sparse=3, Meta=4, Python=5,
                    DynamicLayerBackMode=6, AutogradCPU=7, AutogradMeta=11, ForwardAD=12,
                    AutocastCPU=13, AutocastMeta=17, VmapCPU=18, VmapMeta=22, Composite=23,
                    VmapMode=24, DynamicLayerFrontMode=25, EndOfKeys=26)
    for name, value in expected.items():
        assert DispatchKey[name] == value


@pytest.mark.parametrize("backend", K.BACKEND_KEYS)
def test_derived_keys_are_arithmetic(backend):
    assert K.to_autograd_key(backend) == backend + 7
    assert K.to_autocast_key(backend) == backend + 13
    assert K.to_vmap_key(backend) == backend + 18
    for derived in (K.to_autograd_key, K.to_autocast_key, K.to_vmap_key):
        assert K.to_backend_key(derived(backend)) == backend
    assert K.is_autograd_key(K.to_autograd_key(backend))
    assert not K.is_autograd_key(backend)


def test_keyset_bitmask_and_highest_priority():
    ks = DispatchKeySet([DispatchKey.CPU, DispatchKey.AutogradCPU])
    assert ks.bits == (1 << 0) | (1 << 7)
    assert ks.highest_priority_key() == DispatchKey.AutogradCPU
    assert K.highest_priority_key(ks.bits) == 7 == ks.bits.bit_length() - 1
    assert (ks - DispatchKeySet([DispatchKey.AutogradCPU])).highest_priority_key() == 0
    assert DispatchKey.CPU in ks and DispatchKey.CUDA not in ks
    assert repr(ks) == "DispatchKeySet({AutogradCPU, CPU})"
    with pytest.raises(ValueError):
        DispatchKeySet().highest_priority_key()


def test_key_set_of_cpu_meta_and_inference_tensors():
    assert tp.dispatch.key_set(tp.ones(2)) == DispatchKeySet([DispatchKey.CPU,
                                                             DispatchKey.AutogradCPU])
    assert tp.dispatch.key_set(tp.ones(2, device="meta")) == DispatchKeySet(
        [DispatchKey.Meta, DispatchKey.AutogradMeta])
    with tp.inference_mode():
        t = tp.ones(2)
    assert t.is_inference()
    assert tp.dispatch.key_set(t) == DispatchKeySet([DispatchKey.CPU])


def test_key_set_is_computed_not_stored():
    """The key set follows the impl's state: flipping the inference flag changes it."""
    t = tp.ones(2)
    before = t._impl.key_set()
    t._impl.inference = True
    assert t._impl.key_set() == 1 << DispatchKey.CPU != before


# ---- the dispatch table ----------------------------------------------------------------
def test_backend_falls_back_to_composite_and_override_replaces_it():
    op = new_op()
    op.register(DispatchKey.Composite, lambda self: "composite")
    x = tp.ones(1)
    assert call(op, x) == "composite"
    op.register(DispatchKey.CPU, lambda self: "cpu")       # no unregister needed
    assert call(op, x) == "cpu"
    assert call(op, tp.ones(1, device="meta")) == "composite"  # Meta still falls back


def test_wrapper_keys_get_the_keyset_and_fall_through_when_empty():
    op = new_op()
    seen = []
    op.register(DispatchKey.CPU, lambda self: "cpu")

    def autograd_wrapper(ks, self):
        seen.append(DispatchKeySet(ks))
        return op.redispatch(ks & ~K.AUTOGRAD_MASK, self)

    assert call(op, tp.ones(1)) == "cpu"            # AutogradCPU empty: fall through
    op.register(DispatchKey.AutogradCPU, autograd_wrapper)
    assert call(op, tp.ones(1)) == "cpu"
    assert seen == [DispatchKeySet([DispatchKey.CPU, DispatchKey.AutogradCPU])]


def test_tls_exclude_and_include():
    op = new_op()
    op.register(DispatchKey.CPU, lambda self: "cpu")
    op.register(DispatchKey.AutogradCPU, lambda ks, self: "autograd")
    op.register(DispatchKey.DynamicLayerFrontMode, lambda ks, self: "front")
    x = tp.ones(1)
    assert call(op, x) == "autograd"
    with ExcludeKeys(K.AUTOGRAD_MASK):
        assert local_keys.excluded == K.AUTOGRAD_MASK
        assert call(op, x) == "cpu"
    assert local_keys.excluded == 0
    with IncludeKeys(1 << DispatchKey.DynamicLayerFrontMode):
        assert call(op, x) == "front"
    assert call(op, x) == "autograd"


def test_kernel_miss_names_op_key_and_registered_keys():
    op = new_op()
    op.register(DispatchKey.Meta, lambda self: None)
    with pytest.raises(NoKernelError) as info:
        call(op, tp.ones(1))
    msg = str(info.value)
    assert op.name in msg and "CPU" in msg and "Meta" in msg
    assert isinstance(info.value, NotImplementedError)


def test_trace_kernel_miss_prints_stack_to_stderr():
    code = (
        "import tensorplay as tp\n"
        "from tensorplay.dispatch.dispatcher import Dispatcher, OpSchema, dispatcher\n"
        "op = dispatcher.define(OpSchema('test.miss', 'test.miss(Tensor self)', ('self',), (0,)))\n"
        "def caller():\n"
        "    x = tp.ones(1)\n"
        "    op.call(x._impl.key_set(), x)\n"
        "try:\n"
        "    caller()\n"
        "except NotImplementedError:\n"
        "    pass\n"
    )
    env = {"TP_TRACE_KERNEL_MISS": "1", "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "[TP_TRACE_KERNEL_MISS] op=test.miss key=CPU" in res.stderr
    assert "in caller" in res.stderr          # the stack shows who called
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"})
    assert "TP_TRACE_KERNEL_MISS" not in quiet.stderr


def test_signature_mismatch_is_refused_at_registration():
    op = new_op(arg_names=("self", "other"), tensors=(0, 1))
    with pytest.raises(ArgumentError, match=r"takes \(self\) but the schema .* needs "
                                            r"\(self, other\)"):
        op.register(DispatchKey.CPU, lambda self: None)
    with pytest.raises(ArgumentError, match=r"needs \(ks, self, other\)"):
        op.register(DispatchKey.AutogradCPU, lambda self, other: None)


def test_real_ops_reject_a_wrong_kernel():
    with pytest.raises(ArgumentError, match="add.Tensor"):
        tp.library.Library("CPU", "Broken").impl("add.Tensor", lambda self, other: None)



@pytest.fixture
def family_ops():
    """Define ops whose names differ before the dot (what a family kernel is told), and
    remove them afterwards: unlike `test.*` ops they would look like real operators."""
    defined = []

    def define(name, arg_names, tensors):
        defined.append(name)
        return dispatcher.define(OpSchema(name, f"{name}(...)", arg_names, tensors))
    yield define
    for name in defined:
        del dispatcher.ops[name]


def test_family_kernel_serves_overloads_and_gets_the_op_name(family_ops):
    n = next(_counter)
    fill = family_ops(f"fam{n}.Scalar", ("self", "value"), (0,))
    fill_ = family_ops(f"fam{n}_.Tensor", ("self", "value"), (0,))

    @tp.library.kernel(family=True)
    def family(op, self, value):
        return op, value

    lib = tp.library.Library("CPU", "TestFamily")
    lib.impl(fill.name, family)
    lib.impl(fill_.name, family)
    x = tp.ones(2)
    assert call(fill, x, 2.0) == (f"fam{n}", 2.0)
    assert call(fill_, x, 3.0) == (f"fam{n}_", 3.0)


def test_family_kernel_star_params_take_only_the_trailing_arguments():
    op = new_op(arg_names=("self", "size", "scale"))

    @tp.library.kernel(family=True)
    def good(op, self, size, *params):
        return op, params

    @tp.library.kernel(family=True)
    def bad(op, self, scale, *params):
        return params

    lib = tp.library.Library("CPU", "TestFamilyParams")
    lib.impl(op.name, good)
    assert call(op, tp.ones(1), 4, 0.5) == ("test", (0.5,))
    with pytest.raises(ArgumentError, match=r"takes \(self, scale\) but the schema .* needs "
                                            r"\(self, size, scale\)"):
        lib.impl(op.name, bad)


# ---- second level: the kernel registry ---------------------------------------------------
def test_priority_orders_candidates_and_dtype_filters():
    op = new_op()
    lib = tp.library.Library("CPU", "TestPriority")
    lib.impl(op.name, lambda self: "generic", name="generic", priority=0)
    lib.impl(op.name, lambda self: "fast-f32", name="fast", priority=10, dtypes={tp.float32})
    assert call(op, tp.ones(2)) == "fast-f32"
    assert call(op, tp.ones(2, dtype=tp.float64)) == "generic"


def test_shape_rule_and_contiguity_constraints():
    op = new_op()
    lib = tp.library.Library("CPU", "TestShape")
    lib.impl(op.name, lambda self: "generic", name="generic")
    rule = ShapeRule("last dim multiple of 4", lambda self: self.shape[-1] % 4 == 0)
    lib.impl(op.name, lambda self: "vec4", name="vec4", priority=5, shape=rule,
             contiguous=True)
    assert call(op, tp.ones(3, 8)) == "vec4"
    assert call(op, tp.ones(3, 6)) == "generic"
    assert call(op, tp.ones(8, 8).t()[:, :4]) == "generic"   # non-contiguous


def test_constraint_error_hands_over_to_next_candidate():
    op = new_op()
    lib = tp.library.Library("CPU", "TestHandOver")

    def picky(self):
        raise KernelConstraintError("only even numel")
    lib.impl(op.name, lambda self: "generic", name="generic", priority=0)
    lib.impl(op.name, picky, name="picky", priority=9)
    with explain(file=False) as ex:
        assert call(op, tp.ones(3)) == "generic"
    assert "hand-over" in ex.text and "picky raised KernelConstraintError" in ex.text


def test_cache_hit_and_invalidation_on_registration():
    op = new_op()
    lib = tp.library.Library("CPU", "TestCache")
    lib.impl(op.name, lambda self: "v1", name="k1")
    x = tp.ones(2)
    with explain(file=False) as ex:
        call(op, x)
        call(op, x)
    assert "cache     miss" in ex.text and "cache     hit" in ex.text
    version = registry_version()
    lib.impl(op.name, lambda self: "v2", name="k2", priority=1)
    assert registry_version() == version + 1
    with explain(file=False) as ex:
        assert call(op, x) == "v2"
    assert "cache     miss" in ex.text


def test_dtype_promotion_fallback_casts_back():
    op = new_op()
    lib = tp.library.Library("CPU", "TestPromote")
    lib.impl(op.name, lambda self: self * 2, name="f32-only", dtypes={tp.float32})
    with explain(file=False) as ex:
        out = call(op, tp.tensor([1.5, 2.0], dtype=tp.float16))
    assert out.dtype == tp.float16 and out.tolist() == [3.0, 4.0]
    assert "dtype promotion float16 -> float32" in ex.text


def test_dtype_promotion_fallback_writes_back_inplace_results():
    op = new_op(mutable=(0,))
    lib = tp.library.Library("CPU", "TestPromoteInplace")
    lib.impl(op.name, lambda self: self.mul_(3), name="f32-only", dtypes={tp.float32})
    x = tp.tensor([1.0, 2.0], dtype=tp.float16)
    out = call(op, x)
    assert out is x and x.tolist() == [3.0, 6.0]


def test_layout_fallback_makes_inputs_contiguous():
    op = new_op()
    lib = tp.library.Library("CPU", "TestLayout")
    seen = []

    def contiguous_only(self):
        seen.append(self.is_contiguous())
        return self.sum()
    lib.impl(op.name, contiguous_only, name="contig", contiguous=True)
    x = tp.arange(6.0).view(2, 3).t()
    with explain(file=False) as ex:
        assert call(op, x).item() == 15.0
    assert seen == [True] and "layout conversion" in ex.text


def test_device_fallback_only_when_enabled():
    op = new_op()
    tp.library.Library("CPU", "TestDevice").impl(op.name, lambda self: self + 1, name="cpu")
    m = tp.ones(2, device="meta")
    with pytest.raises(NoKernelError, match="no kernel"):
        call(op, m)
    tp.library.Library("Meta", "TestDevice").impl(op.name, lambda self: self, name="picky",
                                                  dtypes={tp.int64})
    with pytest.raises(NoKernelError, match=r"picky \(priority 0\): dtype float32 not in"):
        call(op, m)


def test_device_fallback_runs_on_cpu_with_a_warning():
    op = new_op()
    tp.library.Library("CPU", "TestDevice2").impl(op.name, lambda self: self + 1, name="cpu")
    tp.library.Library("CUDA", "TestDevice2").impl(op.name, lambda self: self, name="ints",
                                                   dtypes={tp.int64})
    enable_device_fallback(True)
    try:
        # (on cuda: a meta tensor has no data to move to the CPU, as in PyTorch)
        with pytest.warns(UserWarning, match="computing on the CPU"):
            out = call(op, tp.ones(2, device="cuda"))
        assert out.device == tp.device("cuda")
        assert out.cpu().tolist() == [2.0, 2.0]
    finally:
        enable_device_fallback(False)


def test_no_match_lists_every_candidate_and_why():
    op = new_op()
    lib = tp.library.Library("CPU", "TestNoMatch")
    lib.impl(op.name, lambda self: 0, name="ints", dtypes={tp.int64})
    lib.impl(op.name, lambda self: 0, name="bools", dtypes={tp.bool}, priority=3)
    with pytest.raises(NoKernelError) as info:
        call(op, tp.ones(2, dtype=tp.float64))
    msg = str(info.value)
    assert "bools (priority 3): dtype float64 not in {bool}" in msg
    assert "ints (priority 0): dtype float64 not in {int64}" in msg


# ---- explain --------------------------------------------------------------------------
def test_explain_shows_every_hop_of_add():
    a, b = tp.ones(3), tp.ones(3)
    with explain(file=False) as ex:
        a + b
    text = ex.text
    assert text.splitlines()[0] == "add.Tensor(float32[3], float32[3], 1)"
    for hop in ("key set   {AutogradCPU, CPU}", "CPU -> kernel registry",
                "kernel    cpu_kernels.pointwise.add", "result    float32[3]"):
        assert hop in text


def test_dump_lists_the_table():
    text = tp.dispatch.op("add.Tensor").dump()
    assert "CPU" in text and "cpu_kernels.pointwise.add" in text and "Meta" in text


def test_keys_numbered_ahead_of_their_use_are_not_shown():
    # No kernel is registered for Vulkan, so neither it nor its Autograd key (where the
    # generated wrappers sit) appears in dump(), repr() or explain(). Sparse has kernels
    # (tensorplay/sparse), so it shows, but only for the ops it serves.
    handle = tp.dispatch.op("add.Tensor")
    text = handle.dump()
    assert "AutogradCPU" in text and "AutogradMeta" in text
    assert "Vulkan" not in text and "Sparse" in text
    assert "Vulkan" not in repr(handle) and "AutogradCPU" in repr(handle)
    assert "Sparse" not in tp.dispatch.op("relu6").dump()      # no Composite fallback rows
    a = tp.ones(3, requires_grad=True)
    with explain(file=False) as ex:
        a + a
    assert "excluded {AutogradMeta, AutogradSparse, AutogradCUDA, AutogradCPU}" in ex.text or \
        "excluded {AutogradMeta, AutogradSparse, AutogradCPU}" in ex.text
    assert "Vulkan" not in ex.text


def test_a_backend_is_shown_once_some_op_has_a_kernel_for_it():
    private = Dispatcher()                  # not the global one: its keys stay as they are
    handle = private.define(OpSchema("test.vulkan", "test.vulkan(Tensor self)", ("self",),
                                     (0,), (), ()))
    vulkan_bits = K.backend_mask(DispatchKey.Vulkan)
    assert private.shown_keys() & vulkan_bits == 0
    handle.register(DispatchKey.Vulkan, lambda self: self)
    assert private.shown_keys() & vulkan_bits == vulkan_bits
    assert vulkan_bits == (1 << DispatchKey.Vulkan) | (1 << DispatchKey.AutogradVulkan) | \
        (1 << DispatchKey.AutocastVulkan) | (1 << DispatchKey.VmapVulkan)
