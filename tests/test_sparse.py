"""Sparse COO tensors against PyTorch's: values, layouts and gradients.

Every op runs twice, once with `tp` and once with `torch` as `lib`, on the same random
inputs in three forms: coalesced, uncoalesced with duplicated coordinates, and empty
(nnz = 0). A sparse result is compared by layout, shape, dtype and the dense tensor it
stands for (PyTorch keeps explicit zeros in some results, e.g. the product of an
uncoalesced pair, where ours has none); coordinates are compared exactly where they are
a contract (coalesce, to_sparse). Gradients are those of a fixed random weighting of the
output, read on the leaves: the values of each sparse input and each dense operand.
Where PyTorch has no backward for a sparse op (sqrt, Tensor.sum, index_select), only the
values are compared.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DimError, LayoutError, NoKernelError, ShapeError

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning"),
              pytest.mark.filterwarnings("ignore:Sparse CSR tensor support:UserWarning")]

FORMS = ["coalesced", "duplicates", "empty"]
LIBS = (tp, torch)


class SparseSpec:
    """A random sparse input: coordinates and values in NumPy, built in either library."""

    def __init__(self, rng, size, form, sparse_dim=None, nnz=6, positive=False):
        sparse_dim = len(size) if sparse_dim is None else sparse_dim
        nnz = 0 if form == "empty" else nnz
        idx = np.stack([rng.integers(0, s, nnz) for s in size[:sparse_dim]]).astype(np.int64)
        idx = idx.reshape(sparse_dim, nnz)
        if form == "duplicates":
            idx[:, -1] = idx[:, 0]
            idx[:, -2] = idx[:, 1]
        values = rng.standard_normal((nnz,) + tuple(size[sparse_dim:]))
        self.idx = idx
        self.values = np.abs(values) + 0.1 if positive else values
        self.size = tuple(size)
        self.coalesce = form == "coalesced"

    def build(self, lib):
        values = lib.tensor(self.values, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(self.idx), values, self.size)
        return (s.coalesce() if self.coalesce else s), values


class DenseSpec:
    def __init__(self, rng, size):
        self.array = rng.standard_normal(size)

    def build(self, lib):
        t = lib.tensor(self.array, requires_grad=True)
        return t, t


def to_numpy(t):
    return t.detach().numpy()      # the same call in both libraries


def assert_same(ours, theirs, what="result"):
    assert ours.is_sparse == theirs.is_sparse, f"{what}: layout differs"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape differs"
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1], f"{what}: dtype differs"
    if theirs.is_sparse:
        ours, theirs = ours.to_dense(), theirs.to_dense()
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-7, atol=1e-9,
                               err_msg=what)


def run_both(op, specs, seed=0, grad=True):
    """op(lib, *inputs) in both libraries; compare the results and the leaves' gradients."""
    results, grads = [], []
    for lib in LIBS:
        built = [spec.build(lib) for spec in specs]
        out = op(lib, *[b[0] for b in built])
        results.append(out)
        if grad and out.dtype.is_floating_point and out.requires_grad:
            weights = np.random.default_rng(seed).standard_normal(tuple(out.shape))
            dense = out.to_dense() if out.is_sparse else out
            (dense * lib.tensor(weights)).sum().backward()
        grads.append([b[1].grad for b in built])
    assert_same(results[0], results[1])
    for i, (ours, theirs) in enumerate(zip(*grads)):
        if theirs is None:
            assert ours is None or not to_numpy(ours).any(), f"input {i}: unexpected grad"
            continue
        assert ours is not None, f"input {i}: no gradient"
        theirs = theirs.to_dense() if theirs.is_sparse else theirs
        ours = ours.to_dense() if ours.is_sparse else ours
        assert_same(ours, theirs, f"gradient of input {i}")
    return results[0]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---- construction, conversion, properties -----------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_construction_and_conversions(rng, form):
    spec = SparseSpec(rng, (4, 5), form)
    run_both(lambda lib, s: s.to_dense(), [spec])
    run_both(lambda lib, s: s.coalesce(), [spec])
    run_both(lambda lib, s: s.to_dense().to_sparse(), [spec])
    ours, _ = spec.build(tp)
    theirs, _ = spec.build(torch)
    assert ours.layout is tp.sparse_coo and tp.ones(2).layout is tp.strided
    assert ours.is_sparse and not tp.ones(2).is_sparse
    assert tp.dispatch.key_set(ours) == tp.dispatch.DispatchKeySet(
        [tp.dispatch.DispatchKey.Sparse, tp.dispatch.DispatchKey.AutogradSparse])
    assert ours._nnz() == theirs._nnz()
    assert ours.is_coalesced() == theirs.is_coalesced()
    assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())


def test_repr_is_pytorchs():
    def tensors(lib):
        yield lib.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
        yield lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), lib.zeros(0), (2, 3))
        yield lib.sparse_coo_tensor([[0, 1], [1, 0]], lib.ones(2, 2, dtype=lib.float64),
                                    (2, 2, 2))
        yield lib.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (20000, 30000),
                                    requires_grad=True)
    for ours, theirs in zip(tensors(tp), tensors(torch)):
        # "tensorplay." is longer than "torch.": the tail may wrap at another item
        assert " ".join(repr(ours).split()) == \
            " ".join(repr(theirs).replace("torch.", "tensorplay.").split())
    s64 = tp.sparse_coo_tensor([[0]], [1.0], (2,), dtype=tp.float64, requires_grad=True)
    assert "dtype=tensorplay.float64" in repr(s64) and "requires_grad=True" in repr(s64)


def test_size_is_inferred_and_checked():
    s = tp.sparse_coo_tensor([[0, 3], [1, 0]], [1.0, 2.0])
    assert tuple(s.shape) == (4, 2)
    with pytest.raises(DimError, match="sparse_coo_tensor.*'indices'.*out of range"):
        tp.sparse_coo_tensor([[0, 3]], [1.0, 2.0], (3,))
    with pytest.raises(ShapeError, match="sparse_coo_tensor.*'values'"):
        tp.sparse_coo_tensor([[0, 1]], [1.0], (3,))
    with pytest.raises(ShapeError, match="sparse_coo_tensor.*'size'"):
        tp.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3, 3))


def test_values_and_indices_need_a_coalesced_tensor():
    s = tp.sparse_coo_tensor([[0, 0]], [1.0, 2.0], (2,))
    with pytest.raises(LayoutError, match="values.*coalesce"):
        s.values()
    with pytest.raises(LayoutError, match="indices.*coalesce"):
        s.indices()
    assert s.coalesce().values().tolist() == [3.0]


# ---- arithmetic ---------------------------------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_add_sub_mul(rng, form):
    a = SparseSpec(rng, (4, 5), form)
    b = SparseSpec(rng, (4, 5), "duplicates" if form == "coalesced" else "coalesced")
    dense = DenseSpec(rng, (4, 5))
    run_both(lambda lib, x, y: lib.add(x, y, alpha=0.5), [a, b])
    run_both(lambda lib, x, y: x - y, [a, b])
    run_both(lambda lib, d, x: d + x, [dense, a])
    run_both(lambda lib, d, x: lib.sub(d, x, alpha=2), [dense, a])
    run_both(lambda lib, x, y: x * y, [a, b])
    run_both(lambda lib, x, d: x * d, [a, dense])
    run_both(lambda lib, d, x: d * x, [dense, a])
    run_both(lambda lib, x: x * 2.5, [a])
    run_both(lambda lib, x: 3 * x / 2, [a])
    run_both(lambda lib, x: -x, [a])


def test_sparse_plus_dense_is_refused_as_in_pytorch(rng):
    s, _ = SparseSpec(rng, (3, 3), "coalesced").build(tp)
    with pytest.raises(LayoutError, match=r"add\(sparse, dense\) is not supported"):
        s + tp.ones(3, 3)
    with pytest.raises(ShapeError, match="add.*sizes"):
        s + SparseSpec(rng, (3, 4), "coalesced").build(tp)[0]


@pytest.mark.parametrize("form", FORMS)
def test_entrywise(rng, form):
    a = SparseSpec(rng, (4, 5), form)
    run_both(lambda lib, x: x.relu(), [a])
    run_both(lambda lib, x: x.abs(), [a])
    run_both(lambda lib, x: lib.neg(x), [a])
    run_both(lambda lib, x: x.sqrt(), [SparseSpec(rng, (4, 5), form, positive=True)],
             grad=False)


# ---- products -----------------------------------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_sparse_times_dense(rng, form):
    a = SparseSpec(rng, (4, 5), form)
    d = DenseSpec(rng, (5, 3))
    bias = DenseSpec(rng, (4, 3))
    run_both(lambda lib, x, y: lib.sparse.mm(x, y), [a, d])
    run_both(lambda lib, x, y: lib.mm(x, y), [a, d])
    run_both(lambda lib, x, y: x @ y, [a, d])
    run_both(lambda lib, b, x, y: lib.sparse.addmm(b, x, y, beta=0.5, alpha=2.0), [bias, a, d])
    run_both(lambda lib, b, x, y: lib.addmm(b, x, y), [bias, a, d])
    run_both(lambda lib, y, x: lib.mm(y, x), [DenseSpec(rng, (3, 4)), a])
    run_both(lambda lib, x, y: lib.mm(x, y.t()), [a, SparseSpec(rng, (3, 5), form)])
    run_both(lambda lib, x, v: x @ v, [a, DenseSpec(rng, (5,))])


@pytest.mark.parametrize("form", FORMS)
def test_the_older_sparse_products(rng, form):
    """torch.smm, hspmm, dsmm, sspaddmm (and saddmm): values, gradients, and the entries
    in PyTorch's order (uncoalesced where PyTorch's are)."""
    a, d = SparseSpec(rng, (4, 5), form), DenseSpec(rng, (5, 3))
    base = SparseSpec(rng, (4, 3), form)
    run_both(lambda lib, x, y: lib.dsmm(x, y), [a, d])
    # (PyTorch has no derivative of hspmm, smm and sspaddmm; these ones' gradients are
    # their parts')
    run_both(lambda lib, x, y: lib.hspmm(x, y), [a, d], grad=False)
    run_both(lambda lib, x, y: lib.smm(x, y), [a, d], grad=False)
    run_both(lambda lib, x, y: x.smm(y), [a, d], grad=False)
    for op in (lambda lib, b, x, y: lib.sspaddmm(b, x, y, beta=0.5, alpha=2.0),
               lambda lib, b, x, y: b.sspaddmm(x, y),
               lambda lib, b, x, y: lib.saddmm(b, x, y, beta=2, alpha=-1)):
        run_both(op, [base, a, d], grad=False)
    ours = [tp.smm(a.build(tp)[0], d.build(tp)[0]),
            tp.sspaddmm(base.build(tp)[0], a.build(tp)[0], d.build(tp)[0])]
    theirs = [torch.smm(a.build(torch)[0], d.build(torch)[0]),
              torch.sspaddmm(base.build(torch)[0], a.build(torch)[0], d.build(torch)[0])]
    for o, t in zip(ours, theirs):
        assert o.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(o._indices().numpy(), t._indices().numpy())
    h = tp.hspmm(a.build(tp)[0], d.build(tp)[0])
    assert (h.sparse_dim(), h.dense_dim()) == (1, 1)


def test_the_older_sparse_products_refuse_dense_inputs():
    x = tp.ones(2, 2)
    with pytest.raises(LayoutError, match=r"hspmm\(\): argument 'mat2' must be a dense"):
        tp.hspmm(x.to_sparse(), x.to_sparse())
    with pytest.raises(NoKernelError, match="smm: no kernel for dispatch key CPU"):
        tp.smm(x, x)


def test_copies_of_indices_and_values(rng):
    """(PyTorch's indices_copy / values_copy, made for its functionalization, have no
    sparse kernel: the reference is indices() / values() copied.)"""
    spec = SparseSpec(rng, (4, 5), "coalesced")
    s, st = spec.build(tp)[0], spec.build(torch)[0]
    np.testing.assert_array_equal(tp.indices_copy(s).numpy(), st.indices().numpy())
    values = tp.values_copy(s)
    np.testing.assert_array_equal(values.detach().numpy(), st.values().detach().numpy())
    assert values.untyped_storage() is not s.values().untyped_storage()
    values.sum().backward()             # reaches the leaf values through the copy


def test_leaf_sparse_gradient_of_sparse_mm_is_masked(rng):
    """torch.sparse.mm's gradient for a sparse leaf is sparse, on the leaf's coordinates;
    two backward passes accumulate into it."""
    spec, dense = SparseSpec(rng, (4, 5), "duplicates"), DenseSpec(rng, (5, 3))
    grads = []
    for lib in LIBS:
        s = lib.sparse_coo_tensor(lib.tensor(spec.idx), lib.tensor(spec.values), spec.size,
                                  requires_grad=True)
        d = lib.tensor(dense.array)
        for _ in range(2):
            (lib.sparse.mm(s, d) ** 2).sum().backward()
        assert s.grad.is_sparse
        grads.append(s.grad.to_dense())
    assert_same(*grads)


# ---- reductions, shape, selection, softmax --------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_sum(rng, form):
    a = SparseSpec(rng, (4, 5), form)
    run_both(lambda lib, x: x.sum(), [a], grad=False)
    run_both(lambda lib, x: lib.sparse.sum(x), [a])
    for dim in (0, 1, -1, (0, 1)):
        run_both(lambda lib, x: lib.sparse.sum(x, dim), [a])
    run_both(lambda lib, x: x.sum(1, keepdim=True), [a], grad=False)


@pytest.mark.parametrize("form", FORMS)
def test_transpose_and_index_select(rng, form):
    a = SparseSpec(rng, (4, 5), form)
    run_both(lambda lib, x: x.t(), [a])
    run_both(lambda lib, x: x.transpose(1, 0), [a])
    run_both(lambda lib, x: x.index_select(0, lib.tensor([3, 0, 3])), [a], grad=False)
    run_both(lambda lib, x: x.index_select(1, lib.tensor([4, 1])), [a], grad=False)
    ours = a.build(tp)[0].index_select(1, tp.tensor([4, 1]))
    theirs = a.build(torch)[0].index_select(1, torch.tensor([4, 1]))
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())


@pytest.mark.parametrize("form", FORMS)
def test_softmax(rng, form):
    a = SparseSpec(rng, (4, 5), form)
    for dim in (0, 1):
        run_both(lambda lib, x: lib.sparse.softmax(x, dim), [a])
        run_both(lambda lib, x: lib.sparse.log_softmax(x, dim), [a])


# ---- hybrid: trailing dense dims -------------------------------------------------------------
def test_hybrid(rng):
    a = SparseSpec(rng, (4, 3, 2), "duplicates", sparse_dim=2)
    b = SparseSpec(rng, (4, 3, 2), "coalesced", sparse_dim=2)
    run_both(lambda lib, x: x.to_dense(), [a])
    run_both(lambda lib, x: x.coalesce(), [a])
    run_both(lambda lib, x, y: x + y, [a, b])
    run_both(lambda lib, x: (x * 2).relu(), [a])
    run_both(lambda lib, x: lib.sparse.sum(x), [a])
    run_both(lambda lib, x: lib.sparse.sum(x, 0), [a])
    run_both(lambda lib, x: lib.sparse.sum(x, 2), [a], grad=False)
    run_both(lambda lib, x: x.transpose(0, 1), [a])
    run_both(lambda lib, x: x.index_select(1, lib.tensor([2, 2, 0])), [a], grad=False)
    run_both(lambda lib, x: x.index_select(2, lib.tensor([1])), [a], grad=False)
    run_both(lambda lib, x: x.to_dense().to_sparse(2), [a])


# ---- second derivatives, conversions, inference mode ---------------------------------------
def test_gradients_are_differentiable(rng):
    """make_coo and values_of backward through differentiable ops: gradgradcheck holds."""
    spec = SparseSpec(rng, (4, 5), "duplicates")
    values = tp.tensor(spec.values, requires_grad=True)
    dense = tp.tensor(rng.standard_normal((5, 3)), requires_grad=True)

    def gcn_like(v, d):
        s = tp.sparse_coo_tensor(tp.tensor(spec.idx), v, spec.size)
        return tp.sparse.softmax(s * 2, 1).to_dense().mm(d.tanh()) + tp.sparse.mm(s, d)

    assert tp.autograd.gradcheck(gcn_like, (values, dense))
    assert tp.autograd.gradgradcheck(gcn_like, (values, dense))


def test_conversions_and_copies(rng):
    spec = SparseSpec(rng, (4, 5), "duplicates")
    run_both(lambda lib, x: x.float(), [spec])
    run_both(lambda lib, x: x.to(lib.float32).double(), [spec])
    run_both(lambda lib, x: x.to("cpu", lib.float32), [spec])
    run_both(lambda lib, x: x.clone(), [spec])
    run_both(lambda lib, x: x.detach(), [spec])
    run_both(lambda lib, x: x.to_dense().sparse_mask(x.coalesce()), [spec])
    s, _ = spec.build(tp)
    assert not s.detach().requires_grad and s.detach()._nnz() == s._nnz()


def test_inference_tensors_run_the_sparse_kernels_directly(rng):
    spec = SparseSpec(rng, (4, 5), "duplicates")
    with tp.inference_mode():
        s = tp.sparse_coo_tensor(tp.tensor(spec.idx), tp.tensor(spec.values), spec.size)
        assert s.is_inference()
        out = tp.sparse.mm(s * 2, tp.ones(5, 2, dtype=tp.float64))
    expected = 2 * spec_dense(spec) @ np.ones((5, 2))
    np.testing.assert_allclose(out.numpy(), expected)


def spec_dense(spec):
    dense = np.zeros(spec.size)
    np.add.at(dense, tuple(spec.idx), spec.values)
    return dense


# ---- what is not supported -----------------------------------------------------------------
def test_other_ops_name_themselves_as_unsupported(rng):
    s, _ = SparseSpec(rng, (3, 3), "coalesced").build(tp)
    for name, call in [("exp", lambda: s.exp()), ("view", lambda: s.view(9)),
                       ("softmax", lambda: tp.softmax(s, 1)), ("flatten", lambda: s.flatten()),
                       ("gt", lambda: s > 0), ("cat", lambda: tp.cat([s, s]))]:
        with pytest.raises(NoKernelError, match=fr"{name}.*not supported for sparse tensors"):
            call()
    with pytest.raises(LayoutError, match="strides"):
        s.stride()
    with pytest.raises(LayoutError, match="numpy"):
        s.detach().numpy()
    with pytest.raises(LayoutError, match="is_coalesced.*sparse"):
        tp.ones(2).is_coalesced()


# ---- the example: a two-layer GCN, trained against PyTorch's ----------------------------------
def _normalized_adjacency(rng, n, edges):
    src, dst = rng.integers(0, n, size=(2, edges))
    rows = np.concatenate([src, dst, np.arange(n)])
    cols = np.concatenate([dst, src, np.arange(n)])
    degree = np.bincount(rows, minlength=n).astype(np.float32)
    weight = (1.0 / np.sqrt(degree[rows] * degree[cols])).astype(np.float32)
    return np.stack([rows, cols]), weight


def _gcn_losses(lib, indices, weight, x, labels, params, steps=5):
    adjacency = lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(weight), (len(x), len(x)))
    layer1 = lib.nn.Linear(x.shape[1], params[0].shape[0])
    layer2 = lib.nn.Linear(params[0].shape[0], params[2].shape[0])
    with lib.no_grad():
        for p, value in zip([layer1.weight, layer1.bias, layer2.weight, layer2.bias], params):
            p.copy_(lib.tensor(value))
    model_params = list(layer1.parameters()) + list(layer2.parameters())
    optimizer = lib.optim.SGD(model_params, lr=0.5)
    x, labels = lib.tensor(x), lib.tensor(labels)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        hidden = lib.sparse.mm(adjacency, layer1(x)).relu()
        logits = lib.sparse.mm(adjacency, layer2(hidden))
        loss = lib.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_two_layer_gcn_trains_like_pytorch(rng):
    n, features, hidden, classes = 20, 8, 16, 3
    indices, weight = _normalized_adjacency(rng, n, 40)
    x = rng.standard_normal((n, features)).astype(np.float32)
    labels = rng.integers(0, classes, size=n)
    params = [(rng.standard_normal(shape) * 0.3).astype(np.float32)
              for shape in [(hidden, features), (hidden,), (classes, hidden), (classes,)]]
    ours = _gcn_losses(tp, indices, weight, x, labels, params)
    theirs = _gcn_losses(torch, indices, weight, x, labels, params)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert ours[-1] < ours[0]
