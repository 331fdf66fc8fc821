"""What einsum saves for backward: the operands PyTorch's einsum would keep a view of.

PyTorch has no einsum node: it composes einsum from views (unsqueeze, diagonal, permute,
squeeze), sums, `mul` and `bmm` (aten/src/ATen/native/Linear.cpp, `einsum` and
`sumproduct_pair`), and each of those saves what it saves. So whether an in-place change
of an operand after the call makes backward raise depends on whether the tensor `bmm` or
`mul` kept is still a *view* of that operand, or a new tensor that a `sum` or a reshape
that could not be a view (a strided operand) made from it. TensorPlay's einsum is one op
with one formula, which reads the operands' values; this module replays PyTorch's
composition on sizes and strides only (no data) to decide, per operand, what to save:

    the operand itself   PyTorch's bmm/mul keeps a view of it: an in-place change raises;
    a recorded copy      our formula needs its values, PyTorch kept only a new tensor made
                         from it (the values as they were, no version link: no raise);
    None                 no gradient reads it.

The copy is made while autograd still records (the wrapper calls this before it excludes
the autograd keys), so it keeps the operand's history for a second-order backward.
"""
from __future__ import annotations

from tensorplay.kernel_support.layout import view_strides

_ELLIPSIS = "..."


def einsum_saves(tensors, equation, needed):
    """Per operand: the tensor to save (the operand or a copy of it) or None. `needed[i]`:
    does our formula read operand i (another operand requires grad)?"""
    linked = _linked_operands(equation, tensors)
    saves = []
    for t, need, link in zip(tensors, needed, linked):
        if link:
            saves.append(t)
        elif need:
            saves.append(t.clone())
        else:
            saves.append(None)
    return saves


def _label_index(c):
    # PyTorch's einsum_label_to_index: the order its contraction dims are laid out in
    return ord(c) - ord("A") if c.isupper() else 26 + ord(c) - ord("a")


def _parse(equation, tensors):
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    ops = []
    for term in lhs.split(","):
        labels, k = [], 0
        while k < len(term):
            if term.startswith(_ELLIPSIS, k):
                labels.append(_ELLIPSIS)
                k += 3
            else:
                labels.append(term[k])
                k += 1
        ops.append(labels)
    counts = {}
    ell_num_dim = 0
    for labels, t in zip(ops, tensors):
        named = [c for c in labels if c != _ELLIPSIS]
        if _ELLIPSIS in labels:
            ell_num_dim = max(ell_num_dim, len(t._impl.sizes) - len(named))
        for c in named:
            counts[c] = counts.get(c, 0) + 1
    perm, index, ell_index, found_ell = {}, 0, 0, False
    if not arrow:
        index, found_ell = ell_num_dim, True          # implicit output: ... first
        for c in sorted(counts, key=_label_index):
            if counts[c] == 1:
                perm[c] = index
                index += 1
    else:
        k = 0
        while k < len(rhs):
            if rhs.startswith(_ELLIPSIS, k):
                ell_index, found_ell = index, True
                index += ell_num_dim
                k += 3
            else:
                perm[rhs[k]] = index
                index += 1
                k += 1
    out_size = index
    if not found_ell:
        ell_index = index
        index += ell_num_dim
    for c in sorted(counts, key=_label_index):
        if c not in perm:
            perm[c] = index
            index += 1
    return ops, perm, out_size, index, ell_index, ell_num_dim


def _aligned(labels, t, perm, perm_index, ell_index, ell_num_dim):
    """(sizes, strides) of the operand unsqueezed, diagonalised and permuted to the
    common label order, as PyTorch's einsum does before it multiplies."""
    sizes, strides = list(t._impl.sizes), list(t._impl.strides)
    perm_shape = [-1] * perm_index
    label_dim = {}
    j = 0
    for c in labels:
        if c == _ELLIPSIS:
            missing = ell_num_dim - (len(t._impl.sizes) - len(labels) + 1)
            for _ in range(missing):
                sizes.insert(j, 1)
                strides.insert(j, 1)
            for k in range(ell_num_dim):
                perm_shape[ell_index + k] = j
                j += 1
        elif c in label_dim:            # a repeated label: the diagonal, moved to its dim
            d = label_dim[c]
            size, stride = sizes[j], strides[d] + strides[j]
            del sizes[j], strides[j]
            sizes[d], strides[d] = size, stride
        else:
            label_dim[c] = j
            perm_shape[perm[c]] = j
            j += 1
    for k, p in enumerate(perm_shape):
        if p == -1:
            sizes.append(1)
            strides.append(1)
            perm_shape[k] = j
            j += 1
    return [sizes[p] for p in perm_shape], [strides[p] for p in perm_shape]


class _Operand:
    """Sizes and strides of a tensor in PyTorch's composition, the operand it is still a
    view of (None once a sum or a copying reshape made it new), and requires_grad."""

    def __init__(self, sizes, strides, source, requires_grad):
        self.sizes, self.strides = list(sizes), list(strides)
        self.source, self.requires_grad = source, requires_grad

    def squeeze(self, d):
        del self.sizes[d], self.strides[d]

    def sum(self, d, keepdim=False):
        if self.sizes[d] != 1:
            self.source = None
        if keepdim:
            self.sizes[d], self.strides[d] = 1, 1
        else:
            self.squeeze(d)

    def reshaped(self, order, new_sizes):
        sizes = [self.sizes[d] for d in order]
        strides = [self.strides[d] for d in order]
        viewable = view_strides(tuple(sizes), tuple(strides), tuple(new_sizes)) is not None
        return self.source if viewable else None


def _linked_operands(equation, tensors):
    """For each operand: does PyTorch's composition save a view of it?"""
    ops, perm, out_size, perm_index, ell_index, ell_num_dim = _parse(equation, tensors)
    aligned = [_aligned(labels, t, perm, perm_index, ell_index, ell_num_dim)
               for labels, t in zip(ops, tensors)]
    linked = [False] * len(tensors)
    if len(tensors) == 1:
        return linked                   # a single operand is only summed or viewed
    dim_last_op = [0] * perm_index
    for d in range(perm_index):
        for i in range(1, len(tensors)):
            if aligned[i][0][d] != 1:
                dim_last_op[d] = i
    result = _Operand(*aligned[0], 0, tensors[0]._impl.requires_grad)
    dim = out_size
    for d in range(out_size, perm_index):
        if dim_last_op[d] == 0:
            result.sum(dim)             # squeeze for a size-1 dim: still a view
        else:
            dim += 1
    for i in range(1, len(tensors)):
        operand = _Operand(*aligned[i], i, tensors[i]._impl.requires_grad)
        sum_dims = []
        dim = out_size
        for d in range(out_size, perm_index):
            if dim_last_op[d] < i:
                operand.squeeze(dim)
                continue
            if dim_last_op[d] == i:
                if result.sizes[dim] == 1:
                    operand.sum(dim)
                    result.squeeze(dim)
                    continue
                sum_dims.append(dim)
            dim += 1
        _pair(result, operand, sum_dims, linked)
        result = _Operand([max(a, b) for a, b in zip(result.sizes, operand.sizes)],
                          [1] * len(result.sizes), None,
                          result.requires_grad or operand.requires_grad)
        for d in reversed(sum_dims):
            result.squeeze(d)
    return linked


def _pair(left, right, sum_dims, linked):
    """sumproduct_pair: `mul` when nothing is summed, else permute + reshape + bmm; each
    keeps one side for the other side's gradient."""
    if not sum_dims:
        kept_left, kept_right = left.source, right.source
    else:
        lro, lo, ro = [], [], []
        lro_size = lo_size = ro_size = sum_size = 1
        for d in range(len(left.sizes)):
            sl, sr = left.sizes[d] > 1, right.sizes[d] > 1
            if d in sum_dims:
                if sl and sr:
                    sum_size *= left.sizes[d]
                elif sl:
                    left.sum(d, keepdim=True)
                elif sr:
                    right.sum(d, keepdim=True)
            elif sl and sr:
                lro.append(d)
                lro_size *= left.sizes[d]
            elif sl:
                lo.append(d)
                lo_size *= left.sizes[d]
            else:
                ro.append(d)
                ro_size *= right.sizes[d]
        kept_left = left.reshaped(lro + lo + sum_dims + ro, (lro_size, lo_size, sum_size))
        kept_right = right.reshaped(lro + sum_dims + ro + lo, (lro_size, sum_size, ro_size))
    if right.requires_grad and kept_left is not None:
        linked[kept_left] = True
    if left.requires_grad and kept_right is not None:
        linked[kept_right] = True
