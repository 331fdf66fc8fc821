import tensorplay as tp, warnings
x = tp.randn(3, 4, 5)
i = tp.tensor([2, 0])
print((tp.vmap(lambda v: v[1:, 0])(x) - x[:, 1:, 0]).abs().max())
print((tp.vmap(lambda v: v[i])(x) - x[:, i]).abs().max())
print((tp.vmap(lambda v: v[:, i])(x) - x[:, :, i]).abs().max())
print((tp.vmap(lambda v, j: v[j])(x, tp.tensor([[0, 1], [2, 3], [1, 1]])) - tp.stack([x[0][[0,1]], x[1][[2,3]], x[2][[1,1]]])).abs().max())
def f(v):
    v = v.clone()
    v[0] = 1.0
    return v
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = tp.vmap(f)(x)
    print([str(a.message)[:80] for a in w])
print(out[:, 0].sum().item(), out.shape)
print(tp.vmap(lambda v: v > 0)(x).dtype, tp.func.fallback_ops())
