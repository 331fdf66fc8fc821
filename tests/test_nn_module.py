"""tp.nn.Module, Parameter and the containers, against torch.nn's behaviour."""
import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import nn


class Affine(nn.Module):
    """A two-parameter module written the way a user writes one."""

    def __init__(self, n, lib=nn):
        super().__init__()
        self.weight = lib.Parameter(tp.ones(n) if lib is nn else torch.ones(n))
        self.bias = lib.Parameter(tp.zeros(n) if lib is nn else torch.zeros(n))
        self.register_buffer("count", tp.zeros(()) if lib is nn else torch.zeros(()))
        self.register_buffer("scratch", tp.zeros(2) if lib is nn else torch.zeros(2),
                             persistent=False)

    def forward(self, x):
        return x * self.weight + self.bias


class TorchAffine(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))
        self.bias = torch.nn.Parameter(torch.zeros(n))
        self.register_buffer("count", torch.zeros(()))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        return x * self.weight + self.bias


def net(lib):
    if lib is nn:
        return nn.Sequential(nn.Linear(3, 4), Affine(4), nn.Linear(4, 2))
    return torch.nn.Sequential(torch.nn.Linear(3, 4), TorchAffine(4), torch.nn.Linear(4, 2))


def copy_from_torch(model, tmodel):
    model.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})


def arr(t):
    return np.asarray(t.detach())


# ---- registration -----------------------------------------------------------------
def test_attributes_register_parameters_buffers_and_modules():
    m, tm = net(nn), net(torch.nn)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in m.named_children()] == [n for n, _ in tm.named_children()]
    assert list(m.state_dict()) == list(tm.state_dict())   # non-persistent buffer left out
    assert len(list(m.parameters(recurse=False))) == 0
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())


def test_parameter_is_a_leaf_tensor_sharing_memory():
    t = tp.zeros(3)
    p = nn.Parameter(t)
    assert p.is_leaf and p.requires_grad and isinstance(p, tp.Tensor)
    t.add_(1)
    np.testing.assert_array_equal(arr(p), [1, 1, 1])
    assert type(p * 2) is tp.Tensor
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1., 1.], requires_grad=True)")
    assert not nn.Parameter(tp.ones(2), requires_grad=False).requires_grad
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.data_ptr() != p.data_ptr()


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin)
    assert len(list(m.parameters())) == 2
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4


def test_setattr_rules_and_errors():
    m = Affine(2)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        m.weight = tp.ones(2)
    m.weight = None
    assert "weight" in m._parameters and m.weight is None
    with pytest.raises(TypeError, match="buffer 'count'"):
        m.count = 3
    m.count = tp.ones(())
    assert arr(m.state_dict()["count"]) == 1
    m.plain = 5
    assert m.plain == 5 and "plain" not in m._parameters
    with pytest.raises(AttributeError, match="'Affine' object has no attribute 'nope'"):
        m.nope
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", tp.zeros(1))
    with pytest.raises(KeyError, match='contain "."'):
        m.register_parameter("a.b", None)
    m.extra = nn.Buffer(tp.ones(1))
    assert "extra" in m._buffers
    del m.extra
    assert "extra" not in m._buffers

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tp.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_get_submodule_parameter_buffer():
    m = nn.Sequential(OrderedDict(a=Affine(2), b=nn.Sequential(nn.Linear(2, 2))))
    assert m.get_submodule("b.0") is m.b[0]
    assert m.get_parameter("a.weight") is m.a.weight
    assert m.get_buffer("a.count") is m.a.count
    with pytest.raises(AttributeError, match="no submodule `c`"):
        m.get_submodule("c.d")


def test_missing_forward():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(tp.ones(1))


# ---- modes, gradients, conversion -----------------------------------------------------
def test_train_eval_apply_and_requires_grad():
    m = net(nn)
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Affine", "Linear", "Sequential"]   # children first
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_zero_grad():
    m = nn.Linear(3, 2)
    m(tp.ones(1, 3)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert arr(m.weight.grad).sum() == 0
    m(tp.ones(1, 3)).sum().backward()
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


def test_to_keeps_parameter_objects_and_casts_floats_only():
    m = Affine(3)
    m.register_buffer("steps", tp.zeros((), dtype=tp.int64))
    w = m.weight
    m(tp.ones(3)).sum().backward()
    assert m.double() is m
    assert m.weight is w and w.dtype == tp.float64 and w.grad.dtype == tp.float64
    assert m.steps.dtype == tp.int64 and m.count.dtype == tp.float64
    m.to(tp.float32)
    assert w.dtype == tp.float32
    m.half()
    assert w.dtype == tp.float16
    m.to(dtype=tp.float32, device="cpu")
    assert w.dtype == tp.float32 and w.is_leaf and w.requires_grad
    with pytest.raises(TypeError, match="floating point"):
        m.to(tp.int32)


def test_to_cuda_runs_through_the_triton_backend():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    m = nn.Linear(3, 2)
    x = tp.randn(4, 3)
    expected = m(x)
    w = m.weight
    m.to("cuda")
    assert m.weight is w and w.device == tp.device("cuda") and w.is_leaf
    out = m(x.to("cuda"))
    out.sum().backward()
    np.testing.assert_allclose(arr(out.cpu()), arr(expected), rtol=1e-5, atol=1e-6)
    assert m.weight.grad.device == tp.device("cuda")
    np.testing.assert_allclose(arr(m.weight.grad.cpu()), arr(x.sum(0).expand(2, 3)), rtol=1e-5)
    m.cpu()
    assert m.weight.device == tp.device("cpu") and m.weight.grad.device == tp.device("cpu")


# ---- state dict -------------------------------------------------------------------
def test_state_dict_round_trip_with_torch():
    tm = net(torch.nn)
    m = net(nn)
    result = m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(arr(m(tp.tensor(x))), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    # ... and back into torch
    tm2 = net(torch.nn)
    tm2.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    np.testing.assert_allclose(tm2(torch.tensor(x)).detach().numpy(), arr(m(tp.tensor(x))),
                               rtol=1e-5, atol=1e-6)


def test_state_dict_is_detached_and_keep_vars():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad and sd["weight"].data_ptr() == m.weight.data_ptr()
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_load_state_dict_strict_errors_list_every_problem():
    m = net(nn)
    sd = m.state_dict()
    del sd["2.bias"]
    sd["0.weight"] = tp.zeros(5, 3)
    sd["1.junk"] = tp.zeros(1)
    sd["9.weight"] = tp.zeros(1)
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict(sd)
    msg = str(err.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "2.bias".' in msg
    # torch's order: the root's own pass finds "9.weight" before child 1 finds "1.junk"
    assert 'Unexpected key(s) in state_dict: "9.weight", "1.junk".' in msg
    assert ("size mismatch for 0.weight: copying a param with shape tensorplay.Size([5, 3]) "
            "from checkpoint, the shape in current model is tensorplay.Size([4, 3])." in msg)
    del sd["0.weight"]
    result = m.load_state_dict(sd, strict=False)     # lists, does not raise
    assert result.missing_keys == ["0.weight", "2.bias"]
    assert result.unexpected_keys == ["9.weight", "1.junk"]
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_copies_in_place_and_assign_replaces():
    m = nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": tp.ones(2, 2), "bias": tp.zeros(2)})
    assert m.weight is w and arr(w).sum() == 4
    new = tp.full((2, 2), 3.0)
    m.load_state_dict({"weight": new, "bias": tp.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == new.data_ptr()


# ---- hooks ------------------------------------------------------------------------
def test_forward_hooks_match_torch():
    for lib in (nn, torch.nn):
        m = nn.Linear(3, 2) if lib is nn else torch.nn.Linear(3, 2)
        calls = []
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h2 = m.register_forward_hook(lambda mod, args, out: calls.append(args[0].shape) or out + 1)
        h3 = m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] + 1,), kwargs),
                                    with_kwargs=True)
        x = tp.zeros(1, 3) if lib is nn else torch.zeros(1, 3)
        with (tp.no_grad() if lib is nn else torch.no_grad()):
            m.weight.fill_(1.0)
            m.bias.fill_(0.0)
        out = m(x)
        assert np.asarray(out.detach()).tolist() == [[4.0, 4.0]]   # x*2, then +1: 3 ones summed, +1 by the hook
        assert calls == ["first", (1, 3)]
        for h in (h1, h2, h3):
            h.remove()


@pytest.mark.parametrize("kind", ["pre", "post", "backward", "global pre", "global post",
                                  "global backward"])
def test_a_hook_added_after_plain_calls_runs(kind):
    """A call with no hook anywhere skips the hook walk (Module.__call__'s fast path, as
    PyTorch's): a hook of any kind registered after such calls still runs, and once it
    is removed the calls are plain again."""
    m = nn.Linear(3, 2)
    x = tp.ones(1, 3, requires_grad=True)
    m(x).sum().backward()
    seen = []
    register = {
        "pre": lambda: m.register_forward_pre_hook(lambda *a: seen.append(kind)),
        "post": lambda: m.register_forward_hook(lambda *a: seen.append(kind)),
        "backward": lambda: m.register_full_backward_hook(lambda *a: seen.append(kind)),
        "global pre": lambda: nn.modules.module.register_module_forward_pre_hook(
            lambda *a: seen.append(kind)),
        "global post": lambda: nn.modules.module.register_module_forward_hook(
            lambda *a: seen.append(kind)),
        "global backward": lambda: nn.modules.module.register_module_full_backward_hook(
            lambda *a: seen.append(kind)),
    }[kind]
    handle = register()
    try:
        m(x).sum().backward()
    finally:
        handle.remove()
    assert seen == [kind]
    m(x).sum().backward()
    assert seen == [kind]


def test_full_backward_hook_matches_torch():
    x_np = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    results = {}
    for lib in ("tp", "torch"):
        mod = torch.nn if lib == "torch" else nn
        torch_mod = lib == "torch"
        m = mod.Linear(3, 2)
        with (torch.no_grad() if torch_mod else tp.no_grad()):
            m.weight.copy_((torch if torch_mod else tp).tensor([[1., 2., 3.], [4., 5., 6.]]))
            m.bias.fill_(0.5)
        seen = []

        def hook(module, grad_input, grad_output):
            seen.append((np.asarray(grad_input[0].detach()), np.asarray(grad_output[0].detach())))
            return (grad_input[0] * 10,)

        m.register_full_backward_hook(hook)
        x = (torch if torch_mod else tp).tensor(x_np, requires_grad=True)
        (m(x) ** 2).sum().backward()
        results[lib] = (seen, np.asarray(x.grad), np.asarray(m.weight.grad))
    (tp_seen, tp_xg, tp_wg), (t_seen, t_xg, t_wg) = results["tp"], results["torch"]
    assert len(tp_seen) == len(t_seen) == 1
    np.testing.assert_allclose(tp_seen[0][0], t_seen[0][0], rtol=1e-5)
    np.testing.assert_allclose(tp_seen[0][1], t_seen[0][1], rtol=1e-5)
    np.testing.assert_allclose(tp_xg, t_xg, rtol=1e-5)     # replaced by the hook: x10
    np.testing.assert_allclose(tp_wg, t_wg, rtol=1e-5)


def test_full_backward_hook_when_the_input_needs_no_grad():
    m = nn.Linear(3, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].shape)))
    m(tp.ones(2, 3)).sum().backward()
    assert seen == [((None,), (2, 2))]


# ---- repr and containers ------------------------------------------------------------
def test_repr_tree_matches_torch():
    m = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Identity(), nn.Linear(4, 1, bias=False)))
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4),
                             torch.nn.Sequential(torch.nn.Identity(),
                                                 torch.nn.Linear(4, 1, bias=False)))
    assert repr(m) == repr(tm)
    assert repr(nn.ModuleDict({"a": nn.Identity()})) == repr(
        torch.nn.ModuleDict({"a": torch.nn.Identity()}))


def test_sequential_indexing_slicing_append():
    layers = [nn.Linear(2, 2) for _ in range(4)]
    s = nn.Sequential(*layers)
    assert s[1] is layers[1] and s[-1] is layers[3] and len(s) == 4
    sub = s[1:3]
    assert isinstance(sub, nn.Sequential) and list(sub) == layers[1:3]
    assert list(sub.state_dict()) == ["1.weight", "1.bias", "2.weight", "2.bias"]
    s.append(nn.Identity())
    assert len(s) == 5 and isinstance(s[4], nn.Identity)
    del s[0]
    assert list(s._modules) == ["0", "1", "2", "3"] and s[0] is layers[1]
    s.insert(0, layers[0])
    assert s[0] is layers[0]
    with pytest.raises(IndexError, match="out of range"):
        s[10]
    od = nn.Sequential(OrderedDict(fc=nn.Linear(2, 3), act=nn.Identity()))
    assert od.fc.out_features == 3 and list(od.state_dict()) == ["fc.weight", "fc.bias"]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1), nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 2))
    ml += [nn.Identity()]
    assert len(ml) == 4 and ml[-2].out_features == 2
    assert len(list(ml.parameters())) == 6
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Identity()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    with pytest.raises(NotImplementedError):
        ml(tp.ones(1))


def test_parameter_list_and_dict():
    pl = nn.ParameterList([tp.ones(2), nn.Parameter(tp.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pd = nn.ParameterDict({"a": tp.ones(1)})
    pd["b"] = tp.zeros(2)
    holder = nn.Module()
    holder.pl, holder.pd = pl, pd
    assert list(holder.state_dict()) == ["pl.0", "pl.1", "pd.a", "pd.b"]
    tpl = torch.nn.ParameterList([torch.ones(2), torch.zeros(3)])
    assert repr(pl).replace("tensorplay.", "torch.") == repr(tpl)


def test_train_step_through_a_user_module_matches_torch():
    tm, m = net(torch.nn), net(nn)
    copy_from_torch(m, tm)
    x = np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32)
    tm(torch.tensor(x)).pow(2).mean().backward()
    m(tp.tensor(x)).pow(2).mean().backward()
    for (name, p), (_, tpar) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(arr(p.grad), tpar.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
