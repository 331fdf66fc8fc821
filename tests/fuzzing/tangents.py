"""Forward-mode AD in the programs: an op step's tangent against PyTorch's.

Now and then (TANGENT_SHARE of the op steps that ran in both libraries) the step is run
once more with dual tensors: every input that requires grad becomes a dual tensor with a
random tangent, in TensorPlay (`tp.autograd.forward_ad`) and in PyTorch
(`torch.autograd.forward_ad`) alike, at TensorPlay's own input values (so the inputs
agree exactly and only the op's own rounding is compared). The outputs' tangents must
agree (kind "tangent"). tests/test_forward_ad_ops.py does the same for each sample of the
database in float64; here the op meets the programs' inputs: chained live values,
strided and expanded layouts, float32 and complex dtypes, the edge cases.

The error paths: where PyTorch has no tangent formula ("Trying to use forward AD with
geqrf that does not support it", or one its forward AD refuses: _torch_formula_fails),
TensorPlay may have one (its formulas go further) or
raise NotImplementedError as PyTorch does (tests/test_forward_ad_ops.py's NO_TANGENT);
nothing is compared. Any other error in one library only is a missing or spurious error
at step "jvp:<op>".
"""
from __future__ import annotations

import torch
import torch.autograd.forward_ad as tfw

import tensorplay as tp
import tensorplay.autograd.forward_ad as fw
from opinfo.core import TORCH_DTYPE, make_tensor, to_torch

# The share of op steps that get a tangent check (a dual call costs about two op calls).
TANGENT_SHARE = 0.2


def pytorch_tangent_is_wrong(op, sample):
    """Where PyTorch's tangent is not the derivative, nothing is compared: the ops
    tests/test_forward_ad_ops.py lists (KNOWN, and AGAINST_FINITE_DIFFERENCES's samples,
    which it checks against finite differences instead), and scatter_reduce's 'prod',
    for which PyTorch 2.13's scatter_reduce_jvp returns no tangent at all (a zero
    tangent; TensorPlay's agrees with finite differences)."""
    import test_forward_ad_ops as forward     # (tests/ is on the path, as for opinfo)
    if op.full_name in forward.KNOWN:
        return True
    which = forward.AGAINST_FINITE_DIFFERENCES.get(op.full_name)
    if which is not None and which[0](sample):
        return True
    return op.name == "scatter_reduce" and any(isinstance(a, str) and a == "prod"
                                               for a in sample.args)


def _no_forward_formula(err):
    """PyTorch's (and TensorPlay's) words for an op without a tangent formula."""
    text = str(err)
    return isinstance(err, NotImplementedError) and (
        "forward AD" in text or "forward-mode" in text or "forward grad" in text
        or "jvp" in text)


def _torch_formula_fails(err):
    """PyTorch's tangent formula refused by its own forward AD: norm_except_dim(v, 1, -1)
    returns a 0-dim norm whose tangent its formula makes [1, 1] ("Trying to set a forward
    gradient that has a different size"), and smooth_l1_loss of an integer input and a
    float target, whose formula writes a float tangent into an integer one ("can't be
    cast to the desired output type"). Treated as no formula (TensorPlay's tangent of
    norm_except_dim agrees with finite differences)."""
    text = str(err)
    return ("forward gradient that has a different size" in text
            or "can't be cast to the desired output type" in text)


def _map(fn, value):
    if isinstance(value, (tuple, list)):
        return type(value)(_map(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return fn(value)


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def duals_of(sample):
    """The sample's tensors that get a tangent: those that require grad (the op's
    differentiable inputs, as the step drew them), each once."""
    seen, out = set(), []
    for t in sample.tensors():
        if t.requires_grad and id(t) not in seen and (t.dtype.is_floating_point
                                                      or t.dtype.is_complex):
            seen.add(id(t))
            out.append(t)
    return out


def _tp_call(op, sample, tangents):
    """TensorPlay's output tangents (None for an output without one)."""
    with fw.dual_level():
        def dual(t):
            if isinstance(t, tp.Tensor):
                if id(t) in tangents:
                    return fw.make_dual(t.detach(), tangents[id(t)])
                # a copy: the op may write into an argument that takes no tangent (the
                # running statistics of instance_norm), and the live value must not see
                # that write twice (seed 707410)
                return t.detach().clone()
            return t
        out = op.call(sample.map_tensors(dual))
        return [fw.unpack_dual(o).tangent if isinstance(o, tp.Tensor) else None
                for o in _flat(out)]


def _torch_call(op, sample, tangents, wide=False):
    """PyTorch's output tangents, at TensorPlay's input values (`wide`: the inputs and
    their tangents widened to float64, for the float64 oracle)."""
    from fuzzing.programs import _widened       # (programs.py imports this module)
    widen = _widened if wide else (lambda t: t)
    with tfw.dual_level():
        def dual(t):
            if not isinstance(t, tp.Tensor):
                return to_torch(t)
            primal = widen(to_torch(t, requires_grad=False))
            if id(t) not in tangents:
                return primal
            if 0 in primal.stride() and primal.numel() > 1:
                primal = primal.clone()     # PyTorch refuses a tangent on an expanded tensor
            return tfw.make_dual(primal, widen(to_torch(tangents[id(t)])))
        args = _map(dual, (sample.input, sample.args, sample.kwargs))
        out = op.ref(args[0], *args[1], **args[2])
        return [tfw.unpack_dual(o).tangent if isinstance(o, torch.Tensor) else None
                for o in _flat(out)]


def check_tangents(program, op, sample, twins, depth, precision):
    """Compare the op's output tangents with PyTorch's (see the module's docstring);
    raises the program's _Found on a difference. `twins`: the step's Value of each
    tensor (by id), for the listing."""
    from fuzzing.programs import (_Found, _attempt, _looser,   # (programs.py imports this)
                                  _torch_unsupported)
    duals = duals_of(sample)
    tangents = {id(t): make_tensor(t.shape, t.dtype, rng=program.check_rng, low=-1, high=1)
                for t in duals}
    names = ", ".join(twins[id(t)].name for t in duals)
    program.lines.append(f"    jvp of the step above, tangents for {names}")
    program.step = f"jvp:{op.name}"
    expected, th_err = _attempt(lambda: _torch_call(op, sample, tangents))
    got, tp_err = _attempt(lambda: _tp_call(op, sample, tangents))
    if th_err is not None and (_no_forward_formula(th_err) or _torch_formula_fails(th_err)):
        if tp_err is not None and not (_no_forward_formula(tp_err)
                                       or isinstance(tp_err, tp.errors.TensorPlayError)):
            raise _Found("untyped error", f"jvp: TensorPlay raised {type(tp_err).__name__}: "
                         f"{tp_err} (PyTorch has no tangent formula)")
        return      # PyTorch has no formula: TensorPlay may have one or refuse alike
    if tp_err is not None and th_err is None:
        raise _Found("spurious error", f"jvp: TensorPlay raises {type(tp_err).__name__}: "
                     f"{tp_err}; PyTorch does not")
    if th_err is not None and tp_err is None:
        if _torch_unsupported(th_err):
            # PyTorch lacks the tangent's kernel for the dtype (seed 5013282:
            # "i1e_backward" not implemented for 'BFloat16'): TensorPlay having one is no
            # missing error, as for an op step; the tangent is not compared
            return
        raise _Found("missing error", f"jvp: PyTorch raises {type(th_err).__name__}: "
                     f"{th_err}; TensorPlay does not")
    if th_err is not None:
        return      # both refuse (the step itself ran: a refusal of the tangent's dtype)
    if len(got) != len(expected):
        raise _Found("tangent", f"jvp: {len(got)} outputs, PyTorch {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None and g is None:
            continue
        if e is None:           # no tangent in PyTorch: TensorPlay's must be zero
            if bool((g != 0).any()):
                raise _Found("tangent", f"jvp: output {i} has a non-zero tangent, "
                             f"PyTorch's has none")
            continue
        if g is None:
            if bool((e != 0).any()):
                raise _Found("tangent", f"jvp: output {i} has no tangent, PyTorch's is "
                             f"{e.flatten()[:6].tolist()}")
            continue
        if e.dtype == torch.complex32 and g.dtype is tp.complex64:
            e = e.to(torch.complex64)   # (no complex32 in TensorPlay: see programs._check)
        if e.dtype.is_complex == g.dtype.is_complex and e.element_size() > g.dtype.itemsize:
            # PyTorch keeps a tangent wider than its output where its formula computes in a
            # wider input's dtype (binary_cross_entropy_with_logits of a float64 input and
            # a float16 target: a float64 tangent of a float16 output; ldexp's float64
            # tangent of float32 0-d inputs); TensorPlay's tangents are at most as wide as
            # their outputs (autograd/forward_mode.py, _fit): compared in its dtype
            e = e.to(TORCH_DTYPE[g.dtype])
        elif (op.name == "binary_cross_entropy_with_logits" and e.dtype != TORCH_DTYPE[g.dtype]
              and e.dtype.is_floating_point and g.dtype.is_floating_point):
            # narrower too: PyTorch's tangent of a float32 loss of a float16 self, a float32
            # target with a tangent, and a weight or pos_weight, is float16 (its formula's
            # operands); TensorPlay's is the loss's dtype. Compared at float16's tolerance.
            e = e.to(TORCH_DTYPE[g.dtype])
            precision = _looser(precision, tp.float16)
        elif e.dtype.is_complex and g.dtype.is_complex and e.element_size() < g.dtype.itemsize:
            # PyTorch's tangent narrower than its own output: addr of a float64 0-d self
            # with complex64 vectors is complex128 in both, and PyTorch's tangent of self's
            # term (beta * self_t, a complex64 broadcast) complex64 (seed 10318551).
            # TensorPlay's has the output's dtype: compared at complex64's tolerance.
            e = e.to(TORCH_DTYPE[g.dtype])
            precision = _looser(precision, tp.complex64)
        program._compare(g, e, f"tangent of output {i}", "tangent", depth, strides=False,
                         precision=precision,
                         wide=lambda i=i: _wide_tangent(op, sample, tangents, i))
    program.lines.pop()         # (matched: the listing goes on with the next step)
    program.step = op.name


def _wide_tangent(op, sample, tangents, i):
    """Output i's tangent computed by PyTorch in float64 (inputs and tangents widened),
    for the float64 oracle (Program._compare), or None where it cannot run so."""
    try:
        out = _torch_call(op, sample, tangents, wide=True)[i]
    except Exception:  # noqa: BLE001 - no float64 answer: the oracle does not decide
        return None
    return out if isinstance(out, torch.Tensor) else None
