"""tp.func transforms against torch.func: the same functions (written with tensor methods
and operators, so one definition serves both libraries) on the same float64 values."""
import numpy as np
import pytest
import torch
import torch.func as tf

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError

RNG = np.random.default_rng(11)


def pair(*shape, low=-1.0, high=1.0):
    """The same float64 values as a TensorPlay and a torch tensor."""
    a = RNG.uniform(low, high, shape)
    return tp.tensor(a, dtype=tp.float64), torch.tensor(a, dtype=torch.float64)


def assert_same(ours, theirs):
    """Same nest structure, shapes, dtypes and values (float64: tight tolerance)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tp.Tensor), f"expected a Tensor, got {type(ours).__name__}"
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            assert_same(ours[k], theirs[k])
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (ours, theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t)
    else:
        assert ours == theirs


# ---- functions shared by both libraries ---------------------------------------------------
def chain(x, w):
    return ((x @ w).sin() * x.exp().sum()).sum()


def chain_vector(x, w):
    return (x @ w).sin() * x.exp().sum()


def two_outputs(x, y):
    return (x * y).tanh(), (x.exp() + y.sin()).sum()


def on_a_dict(p, x):
    return ((p["w"] * x).sin() + p["b"][0] * p["b"][1]).sum()


# ---- grad, grad_and_value -----------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_matches_torch_for_each_argnums(argnums):
    (x, tx), (w, tw) = pair(3), pair(3, 2)
    assert_same(tp.func.grad(chain, argnums=argnums)(x, w),
                tf.grad(chain, argnums=argnums)(tx, tw))


def test_grad_and_value_and_has_aux_match_torch():
    (x, tx), (w, tw) = pair(3), pair(3, 2)

    def with_aux(x, w):
        return chain(x, w), {"double": 2 * x, "pair": (x.sin(), w)}

    assert_same(tp.func.grad_and_value(chain)(x, w), tf.grad_and_value(chain)(tx, tw))
    assert_same(tp.func.grad(with_aux, has_aux=True)(x, w),
                tf.grad(with_aux, has_aux=True)(tx, tw))
    assert_same(tp.func.grad_and_value(with_aux, argnums=(0, 1), has_aux=True)(x, w),
                tf.grad_and_value(with_aux, argnums=(0, 1), has_aux=True)(tx, tw))


def test_grad_of_a_pytree_argument_and_keyword_arguments():
    (w, tw), (b0, tb0), (b1, tb1), (x, tx) = pair(4), pair(), pair(), pair(4)
    ours = tp.func.grad(on_a_dict)({"w": w, "b": (b0, b1)}, x=x)
    theirs = tf.grad(on_a_dict)({"w": tw, "b": (tb0, tb1)}, x=tx)
    assert_same(ours, theirs)


def test_grad_gives_zeros_for_an_unused_input_and_plain_results():
    (x, tx), (y, ty) = pair(3), pair(2)
    ours = tp.func.grad(lambda x, y: x.sin().sum(), argnums=(0, 1))(x, y)
    assert_same(ours, tf.grad(lambda x, y: x.sin().sum(), argnums=(0, 1))(tx, ty))
    assert not ours[0].requires_grad and ours[0].grad_fn is None


def test_nested_grad_is_higher_derivative():
    x, tx = pair()
    cube = lambda x: x ** 3     # noqa: E731
    assert_same(tp.func.grad(tp.func.grad(cube))(x), tf.grad(tf.grad(cube))(tx))   # 6x
    assert_same(tp.func.grad(tp.func.grad(tp.func.grad(cube)))(x),
                tf.grad(tf.grad(tf.grad(cube)))(tx))                                # 6


def test_nested_grad_keeps_the_levels_apart():
    (x, tx), (c, tc) = pair(), pair()

    # the inner derivative reads the outer variable through a closure: d/dx x * x = 2x
    def closure(lib):
        return lambda x: x * lib.grad(lambda y: x * y)(c if lib is tp.func else tc)

    # the inner variable is the outer one passed in: d/dy (x * y) = x, so d/dx x = 1
    def same_tensor(lib):
        return lambda x: lib.grad(lambda y: x * y)(x)

    for make in (closure, same_tensor):
        assert_same(tp.func.grad(make(tp.func))(x), tf.grad(make(tf))(tx))


def test_grad_composes_with_autograd_and_ignores_an_outer_no_grad():
    x, tx = pair(3)
    xr, txr = x.detach().requires_grad_(True), tx.detach().requires_grad_(True)
    f = lambda x: (x.sin() * x).sum()    # noqa: E731
    g, tg = tp.func.grad(f)(xr), tf.grad(f)(txr)
    assert g.requires_grad and tg.requires_grad
    assert_same(tp.autograd.grad(g.sum(), xr), torch.autograd.grad(tg.sum(), txr))
    with tp.no_grad():
        assert_same(tp.func.grad(f)(x), tf.grad(f)(tx))


def test_grad_keeps_the_history_of_closed_over_tensors_that_require_grad():
    (x, tx), (w, tw) = pair(3), pair(3, 2)
    wr, twr = w.detach().requires_grad_(True), tw.detach().requires_grad_(True)
    g, tg = tp.func.grad(chain)(x, wr), tf.grad(chain)(tx, twr)
    assert_same(tp.autograd.grad((g * g).sum(), wr), torch.autograd.grad((tg * tg).sum(), twr))
    with tp.no_grad():
        assert not tp.func.grad(chain)(x, wr).requires_grad


# ---- vjp, jvp -----------------------------------------------------------------------------
def test_vjp_matches_torch_and_can_be_called_twice():
    (x, tx), (y, ty) = pair(2, 3), pair(2, 3)
    out, fn = tp.func.vjp(two_outputs, x, y)
    tout, tfn = tf.vjp(two_outputs, tx, ty)
    assert_same(out, tout)
    for _ in range(2):
        (v, tv), (s, ts) = pair(2, 3), pair()
        assert_same(fn((v, s)), tfn((tv, ts)))


def test_vjp_fn_is_differentiable_in_its_cotangents():
    (x, tx), (v, tv) = pair(3), pair(3)
    _, fn = tp.func.vjp(lambda x: x.sin() * x, x)
    _, tfn = tf.vjp(lambda x: x.sin() * x, tx)
    assert_same(tp.func.grad(lambda v: (fn(v)[0] ** 2).sum())(v),
                tf.grad(lambda v: (tfn(v)[0] ** 2).sum())(tv))


def test_vjp_with_aux_and_a_pytree_primal():
    (w, tw), (b0, tb0), (b1, tb1), (x, tx) = pair(4), pair(), pair(), pair(4)

    def f(p, x):
        return (p["w"] * x).sin() * p["b"][0], p["b"][1] * 2

    out, fn, aux = tp.func.vjp(f, {"w": w, "b": (b0, b1)}, x, has_aux=True)
    tout, tfn, taux = tf.vjp(f, {"w": tw, "b": (tb0, tb1)}, tx, has_aux=True)
    assert_same((out, aux), (tout, taux))
    v, tv = pair(4)
    assert_same(fn(v), tfn(tv))


@pytest.mark.parametrize("func", [chain_vector, two_outputs])
def test_jvp_matches_torch(func):
    (x, tx), (w, tw) = pair(3), pair(3, 2) if func is chain_vector else pair(3)
    (u, tu), (v, tv) = pair(3), pair(*tuple(w.shape))
    assert_same(tp.func.jvp(func, (x, w), (u, v)), tf.jvp(func, (tx, tw), (tu, tv)))


def test_vjp_and_jvp_take_complex_outputs_as_torch_func():
    """Complex primals, and a real primal with a complex output: the values, the
    cotangent's product (conjugate Wirtinger, PyTorch's convention, real for a real
    input) and the tangent, against torch.func; the Jacobians keep to real outputs."""
    rng = np.random.default_rng(5)
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    dz = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    r = rng.standard_normal(4)

    def f(x):
        return x * x.sin()

    def to_complex(x):
        return x * (1 + 2j)
    for func, primal, tangent in ((f, z, dz), (to_complex, r, r)):
        out, fn = tp.func.vjp(func, tp.tensor(primal))
        tout, tfn = tf.vjp(func, torch.tensor(primal))
        assert_same(out, tout)
        assert_same(fn(tp.tensor(dz)), tfn(torch.tensor(dz)))
        assert_same(tp.func.jvp(func, (tp.tensor(primal),), (tp.tensor(tangent),)),
                    tf.jvp(func, (torch.tensor(primal),), (torch.tensor(tangent),)))
    with pytest.raises(DTypeError, match=r"jacrev\(f\)\(\*args\): every output of the "
                       r"function must have a floating point dtype, got complex128"):
        tp.func.jacrev(to_complex)(tp.tensor(r))


def test_jvp_with_aux_and_strict():
    x, tx = pair(3)
    t, tt = pair(3)
    f = lambda x: (x.exp() * x, x.sum())   # noqa: E731
    assert_same(tp.func.jvp(f, (x,), (t,), has_aux=True), tf.jvp(f, (tx,), (tt,), has_aux=True))
    with pytest.raises(ArgumentError, match="output 1 of the function does not depend"):
        tp.func.jvp(lambda x: (x.sin(), tp.ones(2)), (x,), (t,), strict=True)


# ---- jacrev, jacfwd, hessian ---------------------------------------------------------------
JACOBIAN_CASES = {
    "vector": (chain_vector, (3, (3, 2)), {}),
    "scalar_output": (chain, (3, (3, 2)), {}),
    "tuple_outputs": (two_outputs, ((2, 2), (2, 2)), {}),
    "argnums_tuple": (chain_vector, (3, (3, 2)), {"argnums": (0, 1)}),
    "argnums_last": (two_outputs, (3, 3), {"argnums": -1}),
}


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("case", sorted(JACOBIAN_CASES))
def test_jacobians_match_torch(transform, case):
    func, shapes, kwargs = JACOBIAN_CASES[case]
    pairs = [pair(*(s if isinstance(s, tuple) else (s,))) for s in shapes]
    ours = getattr(tp.func, transform)(func, **kwargs)(*[p[0] for p in pairs])
    # NOTE: torch.func.jacfwd returns zeros for a negative argnums (torch 2.13), so the
    # oracle is asked for the same position counted from the front.
    if kwargs.get("argnums") == -1:
        kwargs = {"argnums": len(pairs) - 1}
    theirs = getattr(tf, transform)(func, **kwargs)(*[p[1] for p in pairs])
    assert_same(ours, theirs)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobian_of_a_pytree_argument_with_aux(transform):
    (w, tw), (b0, tb0), (b1, tb1), (x, tx) = pair(2, 2), pair(), pair(), pair(2)

    def f(p, x):
        y = (p["w"] @ x).tanh() * p["b"][0] + p["b"][1]
        return y, y.sum()

    ours = getattr(tp.func, transform)(f, has_aux=True)({"w": w, "b": (b0, b1)}, x)
    theirs = getattr(tf, transform)(f, has_aux=True)({"w": tw, "b": (tb0, tb1)}, tx)
    assert_same(ours, theirs)


def test_hessian_matches_torch():
    (x, tx), (w, tw) = pair(3), pair(3, 2)
    assert_same(tp.func.hessian(chain)(x, w), tf.hessian(chain)(tx, tw))
    assert_same(tp.func.hessian(chain, argnums=(0, 1))(x, w),
                tf.hessian(chain, argnums=(0, 1))(tx, tw))
    assert_same(tp.func.jacrev(tp.func.grad(chain))(x, w), tf.jacrev(tf.grad(chain))(tx, tw))


def test_transforms_compose_hvp_and_grad_of_vjp():
    (x, tx), (v, tv), (w, tw) = pair(3), pair(3), pair(3, 2)
    f = lambda x: chain(x, w)       # noqa: E731
    tfn = lambda x: chain(x, tw)    # noqa: E731
    assert_same(tp.func.jvp(tp.func.grad(f), (x,), (v,)), tf.jvp(tf.grad(tfn), (tx,), (tv,)))

    def vjp_norm(lib, func):
        return lambda x: (lib.vjp(func, x)[1](x.cos())[0] ** 2).sum()

    elementwise = lambda x: x.sin() * x.exp().sum()    # noqa: E731
    assert_same(tp.func.grad(vjp_norm(tp.func, elementwise))(x),
                tf.grad(vjp_norm(tf, elementwise))(tx))


# ---- functional_call ------------------------------------------------------------------------
class MLP(tp.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = tp.nn.Linear(4, 5, dtype=tp.float64)
        self.fc2 = tp.nn.Linear(5, 3, dtype=tp.float64)
        self.register_buffer("scale", tp.tensor(0.5, dtype=tp.float64))

    def forward(self, x):
        return self.fc2(self.fc1(x).tanh()) * self.scale


def torch_mlp(ours):
    """The same network in torch, weights copied from ours."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    model = model.double()
    with torch.no_grad():
        for theirs, mine in zip((model[0], model[2]), (ours.fc1, ours.fc2)):
            theirs.weight.copy_(torch.tensor(mine.weight.detach().numpy()))
            theirs.bias.copy_(torch.tensor(mine.bias.detach().numpy()))
    return model


def test_mlp_loss_gradient_through_functional_call_matches_torch():
    model = MLP()
    tmodel = torch_mlp(model)
    (x, tx), (y, ty) = pair(6, 4), pair(6, 3)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k.replace("0.", "fc1.").replace("2.", "fc2."): v.detach()
               for k, v in tmodel.named_parameters()}

    def loss(p, x, y):
        return ((tp.func.functional_call(model, p, (x,)) - y) ** 2).mean()

    def tloss(p, x, y):
        p = {k.replace("fc1.", "0.").replace("fc2.", "2."): v for k, v in p.items()}
        return ((tf.functional_call(tmodel, p, (x,)) * 0.5 - y) ** 2).mean()

    assert_same(tp.func.grad_and_value(loss)(params, x, y), tf.grad_and_value(tloss)(tparams, tx, ty))
    # the module's own parameters are back, untouched
    assert all(p is model.get_parameter(k) for k, p in model.named_parameters())
    assert isinstance(model.fc1.weight, tp.nn.Parameter)


def test_functional_call_restores_after_an_exception_and_takes_buffers():
    model = MLP()
    before = dict(model.named_parameters())
    bad = {"fc1.weight": tp.zeros(5, 4, dtype=tp.float64)}
    with pytest.raises(Exception):
        tp.func.functional_call(model, bad, (tp.zeros(2, 7, dtype=tp.float64),))
    assert all(model.get_parameter(k) is v for k, v in before.items())
    x = tp.ones(1, 4, dtype=tp.float64)
    doubled = tp.func.functional_call(model, ({"scale": tp.tensor(1.0, dtype=tp.float64)}, {}), x)
    np.testing.assert_allclose(doubled.detach().numpy(), 2 * model(x).detach().numpy())
    assert model.scale.item() == 0.5


def test_functional_call_ties_weights_and_checks_keys():
    class Tied(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tp.nn.Linear(2, 2, bias=False, dtype=tp.float64)
            self.b = tp.nn.Linear(2, 2, bias=False, dtype=tp.float64)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    model, x = Tied(), tp.ones(1, 2, dtype=tp.float64)
    w = tp.eye(2, dtype=tp.float64) * 3
    assert tp.func.functional_call(model, {"a.weight": w}, x).tolist() == [[9.0, 9.0]]
    untied = tp.func.functional_call(model, {"a.weight": w}, x, tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), model.b(3 * x).detach().numpy())
    with pytest.raises(ArgumentError, match="tied"):
        tp.func.functional_call(model, {"a.weight": w, "b.weight": w * 2}, x)
    with pytest.raises(ArgumentError, match="Missing key\\(s\\): 'b.weight'.*"):
        tp.func.functional_call(model, {"a.weight": w}, x, tie_weights=False, strict=True)
    with pytest.raises(ArgumentError, match="Unexpected key\\(s\\): 'c'"):
        tp.func.functional_call(model, {"a.weight": w, "c": w}, x, strict=True)
    with pytest.raises(ArgumentError, match="several dictionaries"):
        tp.func.functional_call(model, ({"a.weight": w}, {"a.weight": w}), x)


# ---- errors -----------------------------------------------------------------------------------
def test_errors_name_the_transform_and_the_argument():
    x = tp.ones(3, dtype=tp.float64)
    cases = [
        (lambda: tp.func.grad(chain, argnums=[0])(x, x), ArgumentError, "grad.*'argnums'"),
        (lambda: tp.func.grad(chain, argnums=2)(x, x), DimError, "only 2 positional"),
        (lambda: tp.func.grad(chain, argnums=(0, -2))(x, x), ArgumentError, "distinct"),
        (lambda: tp.func.grad(chain, argnums=())(x, x), ArgumentError, "non-empty"),
        (lambda: tp.func.grad(lambda x: x.sum())(3.0), ArgumentError, r"args\[0\] must be a Tensor"),
        (lambda: tp.func.grad(lambda x: x.sum())(tp.ones(2, dtype=tp.int64)), DTypeError,
         "floating point"),
        (lambda: tp.func.grad(lambda x: x * 2)(x), ShapeError, "scalar Tensor.*shape \\[3\\]"),
        (lambda: tp.func.grad(lambda x: x.sum(), has_aux=True)(x), ArgumentError,
         r"has_aux=True.*\(output, aux\)"),
        (lambda: tp.func.jacrev(lambda x: (x, x, x), has_aux=True)(x), ArgumentError,
         "tuple of length 3"),
        (lambda: tp.func.grad(lambda x: (x.sum(), "aux"), has_aux=True)(x), ArgumentError,
         "aux output must hold only Tensors"),
        (lambda: tp.func.vjp(tp.sin, x)[1](tp.ones(2, dtype=tp.float64)), ShapeError,
         "cotangents has shape \\[2\\], expected \\[3\\]"),
        (lambda: tp.func.vjp(tp.sin, x)[1]((x,)), ArgumentError, "structure"),
        (lambda: tp.func.jvp(tp.sin, x, x), ArgumentError, "primals must be a tuple"),
        (lambda: tp.func.jvp(tp.sin, (x,), (x, x)), ArgumentError, "structure of primals"),
        (lambda: tp.func.jacfwd(lambda x: "no")(x), ArgumentError, "only Tensors"),
        (lambda: tp.func.functional_call(MLP(), [1], x), ArgumentError,
         "'parameter_and_buffer_dicts'"),
    ]
    for call, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            call()
