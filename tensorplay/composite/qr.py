"""QR written with other ops: torch.qr's old interface, and the Householder products
(householder_product / orgqr, ormqr).

geqrf leaves Q in LAPACK's compact form: k Householder reflectors

    H_i = I - tau_i v_i v_i^T,    Q = H_1 H_2 ... H_k,

v_i being column i of the factorization below its diagonal, with an implicit 1 on the
diagonal and zeros above it. LAPACK's orgqr and ormqr build or apply Q from them; here
the same product is written as k rank-one updates, each a few differentiable ops. That
makes autograd record the products, so their gradients (PyTorch's
householder_product_backward and ormqr_backward, long formulas) and higher ones come
from the chain rule through the reflectors: the values equal LAPACK's up to rounding,
and no backward formula of their own is needed. (Real dtypes: for complex ones each
v_i^T would be v_i^H.)
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.errors import ShapeError, fmt_shape
from tensorplay.meta.linalg import same_dtype
from tensorplay.meta.qr import check_lapack_dtype, check_matrices


def qr(self, some):
    """torch.qr: linalg.qr with some=True as mode 'reduced', some=False as 'complete'."""
    check_matrices("qr", "self", self)
    return F.linalg_qr(self, "reduced" if some else "complete")


def _reflectors(A, k):
    """The Householder vectors v_1..v_k as the columns of an (..., m, k) matrix: A's first
    k columns below the diagonal, 1 on it, 0 above."""
    m = A.shape[-2]
    first = A.narrow(-1, 0, k)
    return first.tril(-1) + _creation.eye(m, k, dtype=A.dtype, device=A.device)


def _apply(V, tau, C, order, side):
    """C with each H_i = I - tau_i v_i v_i^T applied in `order` (a list of reflector
    indices), from the left (H_i C) or the right (C H_i)."""
    for i in order:
        v = V.narrow(-1, i, 1)                       # (..., m, 1)
        t = tau.narrow(-1, i, 1).unsqueeze(-1)       # (..., 1, 1)
        if side == "left":
            C = C - (t * v).matmul(v.mT.matmul(C))
        else:
            C = C - C.matmul(v).matmul(t * v.mT)
    return C


def _check_batch(op, name, t, input, expected):
    if tuple(t.shape[:-expected]) != tuple(input.shape[:-2]):
        raise ShapeError(f"{op}(): expected the batch dimensions of '{name}' to be equal to "
                         f"'input'.shape[:-2] = {fmt_shape(input.shape[:-2])}, but got "
                         f"{fmt_shape(t.shape[:-expected])}", op=op, arg=name)


def _check_input(op, input, name):
    if input.dim() < 2:
        raise ShapeError(f"{op}(): '{name}' must have at least 2 dimensions, but got shape "
                         f"{fmt_shape(input.shape)}", op=op, arg=name)


def _check_tau_rank(op, input, tau, names):
    if tau.dim() != input.dim() - 1:
        raise ShapeError(f"{op}(): expected '{names[1]}' to have one dimension less than "
                         f"'{names[0]}', but got shapes {fmt_shape(tau.shape)} and "
                         f"{fmt_shape(input.shape)}", op=op, arg=names[1])


def _householder_product(op, input, tau, names):
    _check_input(op, input, names[0])
    _check_tau_rank(op, input, tau, names)
    m, n = input.shape[-2:]
    if m < n:
        raise ShapeError(f"{op}(): '{names[0]}'.shape[-2] must be greater than or equal to "
                         f"'{names[0]}'.shape[-1], but got shape {fmt_shape(input.shape)}",
                         op=op, arg=names[0])
    k = tau.shape[-1]
    if n < k:
        raise ShapeError(f"{op}(): '{names[0]}'.shape[-1] must be greater than or equal to "
                         f"'{names[1]}'.shape[-1], but got {n} and {k}", op=op, arg=names[1])
    _check_batch(op, names[1], tau, input, 1)
    same_dtype(op, [(names[0], input), (names[1], tau)])
    check_lapack_dtype(op, names[0], input)
    # Q's first n columns: the identity's, the reflectors applied from the last one on
    # (H_k first), as orgqr does.
    eye = _creation.eye(m, n, dtype=input.dtype, device=input.device)
    Q = _apply(_reflectors(input, k), tau, eye.expand(tuple(input.shape)), range(k - 1, -1, -1),
               "left")
    if k == 0:
        # No reflector: Q is the identity's columns, still a function of input and of
        # tau (a zero gradient, as PyTorch's result has a grad_fn and requires grad when
        # either does): plus a tril that keeps none of input's entries (exact zeros, nan
        # and inf included) and the sum of tau's no entries (an exact zero).
        Q = Q + input.tril(-m - 1) + tau.sum(-1, keepdim=True).unsqueeze(-1)
    # LAPACK's layout (column-major matrices), as PyTorch returns it
    return Q.mT.contiguous().mT


def linalg_householder_product(input, tau):  # noqa: A002 - the schema's name
    return _householder_product("linalg_householder_product", input, tau, ("input", "tau"))


def orgqr(self, input2):
    return _householder_product("orgqr", self, input2, ("self", "input2"))


def ormqr(self, input2, input3, left, transpose):
    """op(Q) C or C op(Q), Q = H_1 ... H_k from (self, tau = input2), C = input3, op(Q)
    Q^T when transpose."""
    op = "ormqr"
    _check_input(op, self, "self")
    _check_input(op, input3, "input3")
    _check_tau_rank(op, self, input2, ("self", "input2"))
    side = -2 if left else -1
    if input3.shape[side] != self.shape[-2]:
        raise ShapeError(f"{op}(): 'input3'.shape[{side}] must be equal to 'self'.shape[-2] "
                         f"(left={left}), but got shapes {fmt_shape(input3.shape)} and "
                         f"{fmt_shape(self.shape)}", op=op, arg="input3")
    k = input2.shape[-1]
    if k != min(input3.shape[side], self.shape[-1]):
        raise ShapeError(f"{op}(): 'input2'.shape[-1] must be equal to min('input3'.shape"
                         f"[{side}], 'self'.shape[-1]) = "
                         f"{min(input3.shape[side], self.shape[-1])}, but got {k}", op=op,
                         arg="input2")
    _check_batch(op, "input2", input2, self, 1)
    _check_batch(op, "input3", input3, self, 2)
    same_dtype(op, [("self", self), ("input2", input2), ("input3", input3)])
    check_lapack_dtype(op, "self", self)
    # Q C = H_1 (... (H_k C)): the last reflector first; Q^T C = H_k ... H_1 C: the first
    # first; C Q = ((C H_1) ...) H_k: the first first; C Q^T: the last first.
    forward = transpose if left else not transpose
    order = range(k) if forward else range(k - 1, -1, -1)
    result = _apply(_reflectors(self, k), input2, input3, order, "left" if left else "right")
    if k == 0:
        # No reflector: the result is C, yet a function of self and tau too (PyTorch's
        # requires grad when any input does): minus the sum of their no entries, an exact
        # +0 that keeps every value of C (-0.0 - 0.0 is -0.0).
        zero = self[..., :0].sum((-2, -1), keepdim=True) + input2.sum(-1, keepdim=True)[..., None]
        result = result - zero
    return result.mT.contiguous().mT
