# The steps of PyTorch's tutorial "Jacobians, Hessians, hvp, vhp, and more: composing
# function transforms" (torch.func), at small sizes: a Jacobian row by row with
# autograd.grad, then by vmap(vjp) and jacrev, jacfwd against jacrev on tall and wide
# problems (timed with torch.utils.benchmark's Timer), the Hessian three ways, batched
# Jacobians and Hessians, and Hessian-vector products. Timings differ from run to run, so
# what is printed of them is what does not: the statement, its runs, a positive median.
from functools import partial

import torch
import torch.nn.functional as F
from torch.func import hessian, jacfwd, jacrev, jvp, grad, vjp, vmap
from torch.utils.benchmark import Timer

_ = torch.manual_seed(0)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


D = 8
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)


# Row by row: one vector-Jacobian product per unit vector.
def compute_jac(xp):
    rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0]
            for vec in unit_vectors]
    return torch.stack(rows)


xp = x.clone().requires_grad_()
unit_vectors = torch.eye(D)
jacobian = compute_jac(xp)
print(jacobian.shape)
print(jacobian[0])

# vmap over the vjp function: all rows at once.
_, vjp_fn = vjp(partial(predict, weight, bias), x)
ft_jacobian, = vmap(vjp_fn)(unit_vectors)
print("vmap(vjp) matches", torch.allclose(ft_jacobian, jacobian))

ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
print("jacrev matches", torch.allclose(ft_jacobian, jacobian))


def report(timing):
    print(timing.title, timing.number_per_run, len(timing.times), timing.median > 0)


without_vmap = Timer(stmt="compute_jac(xp)", globals=globals())
with_vmap = Timer(stmt="jacrev(predict, argnums=2)(weight, bias, x)", globals=globals())
report(without_vmap.timeit(5))
report(with_vmap.timeit(5))

# Jacobians with respect to the parameters instead.
ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print(ft_jac_weight.shape, ft_jac_bias.shape)

# jacfwd against jacrev: more outputs than inputs, then more inputs than outputs.
for Din, Dout in ((4, 32), (32, 4)):
    weight = torch.randn(Dout, Din)
    bias = torch.randn(Dout)
    x = torch.randn(Din)
    print(weight.shape)
    using_fwd = Timer(stmt="jacfwd(predict, argnums=2)(weight, bias, x)", globals=globals())
    using_bwd = Timer(stmt="jacrev(predict, argnums=2)(weight, bias, x)", globals=globals())
    report(using_fwd.timeit(5))
    report(using_bwd.timeit(5))
    print("jacfwd matches jacrev", torch.allclose(jacfwd(predict, argnums=2)(weight, bias, x),
                                                  jacrev(predict, argnums=2)(weight, bias, x),
                                                  atol=1e-6))

# Hessians: the hessian API, jacfwd(jacfwd) and jacrev(jacrev).
Din, Dout = 6, 3
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(Din)
hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
print(hess_api.shape)
print("hessians agree", torch.allclose(hess_api, hess_fwdfwd, atol=1e-6),
      torch.allclose(hess_api, hess_revrev, atol=1e-6))

# Batched Jacobians: vmap over jacrev, or the Jacobian of the summed outputs.
batch_size, Din, Dout = 4, 5, 3
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(batch_size, Din)
compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian0 = compute_batch_jacobian(weight, bias, x)
print(batch_jacobian0.shape)


def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)


batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
print("summed outputs match", torch.allclose(batch_jacobian0, batch_jacobian1))

compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))
batch_hess = compute_batch_hessian(weight, bias, x)
print(batch_hess.shape)


# Hessian-vector products: forward over reverse, and reverse over reverse.
def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def f(x):
    return x.sin().sum()


x = torch.randn(16)
tangent = torch.randn(16)
result = hvp(f, (x,), (tangent,))


def hvp_revrev(f, primals, tangents):
    _, vjp_fn = vjp(grad(f), *primals)
    return vjp_fn(*tangents)


result_hvp_revrev = hvp_revrev(f, (x,), (tangent,))
print("hvp agree", torch.allclose(result, result_hvp_revrev[0]))
print(result[:4])
