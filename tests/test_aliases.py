"""The ops whose kernel the code generator writes: `alias_of:` and `copy_of:` in ops.yaml.

`arccos` (alias_of: acos) calls acos with its own arguments; `permute_copy` (copy_of:
permute) calls permute and copies the view into new memory. Each is checked here,
against PyTorch's op of the same name, on the samples of the OpInfo entries of the op it
calls: the same values, the same gradients, the same shapes on meta, and for a copy, new
contiguous memory.
tests/test_ops.py leaves them out of its database: their behaviour is their target's.
"""
from __future__ import annotations

import re

import pytest
import torch

import tensorplay as tp
from opinfo import op_db
from opinfo.core import assert_close, to_torch, yaml_ops
from tensorplay._generated import ops as generated_ops
from tensorplay.codegen.model import OperatorName
from tensorplay.codegen.yaml_loader import CodegenError, load_ops

DERIVED = {name: e for name, e in yaml_ops().items() if e.derived_from is not None}


def _python_name(entry):
    """`arccos_` for the in-place overload arccos_ (the schema's name without overload)."""
    return str(entry.schema.name).partition(".")[0]


def _torch_callable(entry, namespace):
    """PyTorch's function (`torch.arccos`, `torch.special.expm1`) or method of the entry."""
    base = _python_name(entry)
    if namespace == "method":
        return getattr(torch.Tensor, base, None)
    for prefix, module in (("special_", torch.special), ("linalg_", torch.linalg)):
        if base.startswith(prefix) and not hasattr(torch, base):
            return getattr(module, base[len(prefix):], None)
    return getattr(torch, base, None)


def _tp_callable(entry, namespace):
    base = _python_name(entry)
    return getattr(tp.Tensor, base) if namespace == "method" else getattr(tp, base)


def _entries_of(target):
    """The OpInfo entries whose samples exercise `target`."""
    return [op for op in op_db if target in op.overloads]


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_pytorch_has_the_op_with_its_variants(name):
    entry = DERIVED[name]
    for variant in entry.variants:
        assert _torch_callable(entry, variant) is not None, \
            f"{name}: PyTorch has no {variant} of this name"


def _fresh(sample, requires_grad):
    """A copy of the sample whose floating tensors require grad (leaves of their own)."""
    def leaf(t):
        t = t.detach().clone()
        return t.requires_grad_() if requires_grad and t.dtype.is_floating_point else t
    return sample.map_tensors(leaf)


class _Recording:
    """Stands in for an op's handle in tensorplay/_generated/ops.py (where the front
    doors find it): calls the op and keeps the arguments of each call that succeeds."""

    def __init__(self, handle):
        self.handle, self.seen = handle, []

    def call(self, ks, *args):
        result = self.handle.call(ks, *args)
        self.seen.append(args)       # a call the op refused is not kept
        return result

    def __getattr__(self, name):
        return getattr(self.handle, name)


def _calls_of(target, sample, call):
    """The arguments (in schema order, as the dispatcher passes them) of each call of op
    `target` made while `call(sample)` runs."""
    attribute = OperatorName.parse(target).unambiguous_name
    handle = getattr(generated_ops, attribute)
    recording = _Recording(handle)
    setattr(generated_ops, attribute, recording)
    try:
        call(sample)
    except (tp.errors.TensorPlayError, TypeError):
        pass              # samples the op refuses (its error tests check them)
    finally:
        setattr(generated_ops, attribute, handle)
    return recording.seen


def _fresh(value, requires_grad):
    """A copy of the arguments whose floating tensors are new leaves (requiring grad if
    asked)."""
    if isinstance(value, tp.Tensor):
        t = value.detach().clone()
        return t.requires_grad_() if requires_grad and t.dtype.is_floating_point else t
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh(v, requires_grad) for v in value)
    return value


def _aten(entry):
    """PyTorch's overload of the same name: torch.ops.aten.arccos.default."""
    name = entry.schema.name
    return getattr(getattr(torch.ops.aten, _python_name(entry)), name.overload or "default")


def _by_kind(entry, args):
    """Schema-order arguments as PyTorch's op objects take them: keyword-only by name."""
    positional, keywords = [], {}
    for a, value in zip(entry.schema.arguments, args):
        if a.kwarg_only:
            keywords[a.name] = value
        else:
            positional.append(value)
    return positional, keywords


def _tensors(value, kind):
    if isinstance(value, kind):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v, kind)]
    return []


def _outputs(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_values_and_gradients_equal_pytorchs(name):
    """On the arguments that reach the target from its OpInfo samples, the derived op
    (called as `tp.ops.arccos.default`) equals PyTorch's op of the same name
    (`torch.ops.aten.arccos.default`), values and gradients."""
    entry = DERIVED[name]
    key, target = entry.derived_from
    packet, _, overload = name.partition(".")
    ours = getattr(getattr(tp.ops, packet), overload or "default")
    theirs = _aten(entry)
    inplace = entry.schema.name.inplace
    checked = 0
    for op in _entries_of(target):
        dtype = tp.float32 if tp.float32 in op.dtypes else op.dtypes[0]
        call = op.call_inplace if target.partition(".")[0].endswith("_") and op.inplace \
            else op.call
        for sample in op.sample_inputs("cpu", dtype):
            for args in _calls_of(target, sample, call):
                differentiable = op.supports_autograd and not inplace and any(
                    t.dtype.is_floating_point for t in _tensors(args, tp.Tensor))
                mine = _fresh(args, differentiable)
                targs, tkw = _by_kind(entry, to_torch(mine))
                try:
                    expected = theirs(*targs, **tkw)
                except RuntimeError as e:
                    if "does not support automatic differentiation" not in str(e):
                        raise
                    # PyTorch records no graph for it (view_as_complex_copy): values only
                    differentiable = False
                    mine = _fresh(args, False)
                    targs, tkw = _by_kind(entry, to_torch(mine))
                    expected = theirs(*targs, **tkw)
                got = ours(*mine)
                assert_close(got, expected, op.tolerance(dtype), where=f"{name} {sample!r}")
                if key == "copy_of":
                    for result in _outputs(got):
                        assert result.is_contiguous(), f"{name}: the copy is not contiguous"
                        assert all(result.untyped_storage() is not t.untyped_storage()
                                   for t in _tensors(mine, tp.Tensor)), \
                            f"{name}: the copy shares memory with an input"
                if differentiable:
                    _check_gradients(name, sample, mine, got, targs, tkw, expected)
                _check_meta(name, ours, args, got)
                checked += 1
    assert checked, f"{name}: no sample of {target}'s OpInfo entries reaches {target}"


def _on_meta(value):
    if isinstance(value, tp.Tensor):
        return tp.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_on_meta(v) for v in value)
    return value


def _check_meta(name, ours, args, got):
    """On meta tensors the op gives results of the CPU's shapes and dtypes."""
    on_meta = _outputs(ours(*_on_meta(args)))
    for m, r in zip(on_meta, _outputs(got)):
        assert (m.device.type, tuple(m.shape), m.dtype) == ("meta", tuple(r.shape), r.dtype), \
            f"{name} on meta: {m.device} {tuple(m.shape)} {m.dtype}, on the cpu {tuple(r.shape)} {r.dtype}"


def _check_gradients(name, sample, mine, got, targs, tkw, expected):
    outs = [o for o in _outputs(got) if o.requires_grad]
    touts = [o for o in _outputs(expected) if o.requires_grad]
    assert len(outs) == len(touts), f"{name}: which outputs require grad differs"
    if not outs:
        return
    leaves = [t for t in _tensors(mine, tp.Tensor) if t.requires_grad]
    tleaves = [t for t in _tensors(list(targs) + list(tkw.values()), torch.Tensor)
               if t.requires_grad]
    # a real loss: a complex output counts through its parts (times 1: the backward of
    # PyTorch's view_as_real cannot take sum's expanded gradient, whose last stride is 0)
    outs = [tp.view_as_real(o) * 1.0 if o.is_complex() else o for o in outs]
    touts = [torch.view_as_real(o) * 1.0 if o.is_complex() else o for o in touts]
    try:
        tgrads = torch.autograd.grad([o.sum() for o in touts], tleaves, allow_unused=True)
    except NotImplementedError:
        # PyTorch has no derivative for some input (igamma's self): nor have we
        with pytest.raises(tp.errors.DerivativeNotImplementedError):
            tp.autograd.grad([o.sum() for o in outs], leaves, allow_unused=True)
        return
    grads = tp.autograd.grad([o.sum() for o in outs], leaves, allow_unused=True)
    for g, tg in zip(grads, tgrads):
        if tg is not None:
            # the sums reduce in another order than PyTorch's: float32 rounding apart
            assert_close(g, tg, (1e-5, 1e-5), check_dtype=True,
                         where=f"{name} gradient {sample!r}")


def test_explain_names_the_op_an_alias_calls():
    x = tp.tensor([0.5, -0.25])
    with tp.dispatch.explain(file=False) as log:
        tp.arccos(x)
    text = "\n".join(log.lines)
    assert "alias_of acos" in text and "cpu_kernels.pointwise.acos" in text


@pytest.mark.parametrize("yaml_text, message", [
    ("- func: arccos(Tensor self) -> Tensor\n  alias_of: acoss\n",
     "alias_of names no op of the file: 'acoss' (did you mean 'acos'?)"),
    ("- func: arccos(Tensor self, int n) -> Tensor\n  alias_of: acos\n",
     "its arguments must be those of 'acos'"),
    ("- func: arccos(Tensor self) -> Tensor\n  alias_of: acos\n"
     "  dispatch: {CPU: pointwise.acos}\n", "has no 'dispatch'"),
    ("- func: acos_copy(Tensor self) -> Tensor\n  copy_of: acos\n",
     "which does not return a view"),
])
def test_codegen_rejects_a_bad_derived_entry(yaml_text, message):
    text = "- func: acos(Tensor self) -> Tensor\n  dispatch: {CPU: pointwise.acos}\n" + yaml_text
    with pytest.raises(CodegenError, match=re.escape(message)):
        load_ops(text)
