"""tp.nn.MultiheadAttention and the Transformer layers against PyTorch: weights copied
from the torch module's state dict (through NumPy), then outputs and the gradients of every
parameter and every input compared."""
import copy

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.errors import DTypeError, ShapeError

torch = pytest.importorskip("torch")

# torch.nn.Transformer builds an encoder that cannot take its nested-tensor path and says so
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")

RTOL, ATOL = 1e-4, 1e-5


# ---- helpers ------------------------------------------------------------------------
def pair(shape, seed, requires_grad=True):
    """The same float32 values as a torch tensor and a tp tensor (both leaves)."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (torch.tensor(a, requires_grad=requires_grad),
            tp.tensor(a, requires_grad=requires_grad))


def mask_pair(a):
    """A mask (bool or float NumPy array) for both libraries."""
    return torch.from_numpy(a.copy()), tp.from_numpy(a.copy())


def copy_weights(tmod, mod):
    mod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


def as_list(out):
    return [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]


def check(tmod, mod, tout, out, tinputs, inputs, rtol=RTOL, atol=ATOL):
    """Same outputs (finite: no NaN to compare equal by accident); then, with the same
    random cotangents, the same gradients of the inputs and of every parameter (by name)."""
    touts, outs = as_list(tout), as_list(out)
    assert len(touts) == len(outs)
    for t, o in zip(touts, outs):
        assert tuple(o.shape) == tuple(t.shape)
        assert np.isfinite(t.detach().numpy()).all()
        np.testing.assert_allclose(np.asarray(o.detach()), t.detach().numpy(), rtol=rtol,
                                   atol=atol, equal_nan=True)
    tloss, loss = 0, 0
    for i, (t, o) in enumerate(zip(touts, outs)):
        g_t, g = pair(tuple(t.shape), 1000 + i, requires_grad=False)
        tloss = tloss + (t * g_t).sum()
        loss = loss + (o * g).sum()
    tloss.backward()
    loss.backward()
    for t, x in zip(tinputs, inputs):
        np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(), rtol=rtol, atol=atol)
    names = [n for n, _ in tmod.named_parameters()]
    assert names == [n for n, _ in mod.named_parameters()]
    for name, p in tmod.named_parameters():
        got = mod.get_parameter(name).grad
        assert got is not None, name
        np.testing.assert_allclose(np.asarray(got), p.grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)


def mha_pair(*args, **kwargs):
    torch.manual_seed(0)
    tmod = torch.nn.MultiheadAttention(*args, **kwargs).eval()
    mod = tp.nn.MultiheadAttention(*args, **kwargs).eval()
    copy_weights(tmod, mod)
    return tmod, mod


E, H, L, S, N = 8, 2, 3, 4, 2   # embed_dim, heads, target and source lengths, batch


# ---- MultiheadAttention: the math ---------------------------------------------------
@pytest.mark.parametrize("need_weights", [True, False])
def test_self_attention(need_weights):
    tmod, mod = mha_pair(E, H)
    tx, x = pair((L, N, E), 0)
    check(tmod, mod, tmod(tx, tx, tx, need_weights=need_weights),
          mod(x, x, x, need_weights=need_weights), [tx], [x])


@pytest.mark.parametrize("average", [True, False])
def test_cross_attention_weights(average):
    tmod, mod = mha_pair(E, H)
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, E), 1)
    tv, v = pair((S, N, E), 2)
    tout = tmod(tq, tk, tv, average_attn_weights=average)
    out = mod(q, k, v, average_attn_weights=average)
    assert tuple(out[1].shape) == ((N, L, S) if average else (N, H, L, S))
    check(tmod, mod, tout, out, [tq, tk, tv], [q, k, v])


def test_key_is_value():
    """key is value (not query): the k and v projections share one matmul."""
    tmod, mod = mha_pair(E, H)
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, E), 1)
    check(tmod, mod, tmod(tq, tk, tk), mod(q, k, k), [tq, tk], [q, k])


def padding_mask(kind):
    pad = np.zeros((N, S), dtype=bool)
    pad[0, -1] = pad[1, 1:3] = True   # keys ignored; every row keeps some key
    return pad if kind == "bool" else np.where(pad, -np.inf, 0.0).astype(np.float32)


def attention_mask(kind, shape):
    rng = np.random.default_rng(7)
    if kind == "float":
        return rng.standard_normal(shape).astype(np.float32)
    keep = rng.random(shape) < 0.7
    keep[..., 0] = True      # every query keeps one key
    return ~keep             # True: not allowed to attend


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_key_padding_mask(kind, need_weights):
    tmod, mod = mha_pair(E, H)
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, E), 1)
    tm, m = mask_pair(padding_mask(kind))
    check(tmod, mod, tmod(tq, tk, tk, key_padding_mask=tm, need_weights=need_weights),
          mod(q, k, k, key_padding_mask=m, need_weights=need_weights), [tq, tk], [q, k])


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("shape", [(L, S), (N * H, L, S)], ids=["2d", "3d"])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attn_mask(kind, shape, need_weights):
    tmod, mod = mha_pair(E, H)
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, E), 1)
    tm, m = mask_pair(attention_mask(kind, shape))
    tkp, kp = mask_pair(padding_mask(kind))
    tout = tmod(tq, tk, tk, attn_mask=tm, key_padding_mask=tkp, need_weights=need_weights)
    out = mod(q, k, k, attn_mask=m, key_padding_mask=kp, need_weights=need_weights)
    check(tmod, mod, tout, out, [tq, tk], [q, k])


@pytest.mark.parametrize("need_weights", [True, False])
def test_causal(need_weights):
    """is_causal=True with the causal mask: scaled_dot_product_attention's own causal
    masking (need_weights=False) or the mask added to the scores (need_weights=True)."""
    tmod, mod = mha_pair(E, H)
    tx, x = pair((L, N, E), 0)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(L)
    mask = tp.from_numpy(tmask.numpy())
    tout = tmod(tx, tx, tx, attn_mask=tmask, is_causal=True, need_weights=need_weights)
    out = mod(x, x, x, attn_mask=mask, is_causal=True, need_weights=need_weights)
    check(tmod, mod, tout, out, [tx], [x])


@pytest.mark.parametrize("same", [True, False], ids=["self", "cross"])
def test_batch_first(same):
    tmod, mod = mha_pair(E, H, batch_first=True)
    tq, q = pair((N, L, E), 0)
    tk, k = pair((N, S, E), 1) if not same else (tq, q)
    tm, m = mask_pair(padding_mask("bool")[:, :k.shape[1]])
    tout = tmod(tq, tk, tk, key_padding_mask=tm)
    out = mod(q, k, k, key_padding_mask=m)
    assert tuple(out[0].shape) == (N, L, E)
    check(tmod, mod, tout, out, [tq] if same else [tq, tk], [q] if same else [q, k])


@pytest.mark.parametrize("masks", ["none", "attn 2-D bool", "attn 3-D float + padding",
                                   "causal"])
def test_batch_first_self_attention_without_weights(masks):
    """batch_first self-attention with need_weights=False: the path that projects and
    splits the heads in the (N, L, E) layout (no transposes), with every kind of mask."""
    tmod, mod = mha_pair(E, H, batch_first=True)
    tx, x = pair((N, L, E), 0)
    kwargs, tkwargs = {}, {}
    if masks == "attn 2-D bool":
        tkwargs["attn_mask"], kwargs["attn_mask"] = mask_pair(attention_mask("bool", (L, L)))
    elif masks == "attn 3-D float + padding":
        tkwargs["attn_mask"], kwargs["attn_mask"] = mask_pair(
            attention_mask("float", (N * H, L, L)))
        tkwargs["key_padding_mask"], kwargs["key_padding_mask"] = mask_pair(
            padding_mask("bool")[:, :L])
    elif masks == "causal":
        tkwargs["attn_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(L)
        kwargs["attn_mask"] = tp.from_numpy(tkwargs["attn_mask"].numpy())
        tkwargs["is_causal"] = kwargs["is_causal"] = True
    tout = tmod(tx, tx, tx, need_weights=False, **tkwargs)
    out = mod(x, x, x, need_weights=False, **kwargs)
    assert tuple(out[0].shape) == (N, L, E) and out[1] is None
    check(tmod, mod, tout, out, [tx], [x])


def test_kdim_vdim():
    tmod, mod = mha_pair(E, H, kdim=5, vdim=3)
    assert [n for n, _ in mod.named_parameters()] == \
        ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj.weight",
         "out_proj.bias"]
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, 5), 1)
    tv, v = pair((S, N, 3), 2)
    tm, m = mask_pair(attention_mask("bool", (L, S)))
    check(tmod, mod, tmod(tq, tk, tv, attn_mask=tm), mod(q, k, v, attn_mask=m),
          [tq, tk, tv], [q, k, v])


@pytest.mark.parametrize("need_weights", [True, False])
def test_bias_kv_and_zero_attn(need_weights):
    """add_bias_kv and add_zero_attn each append a key (S -> S + 2); the masks grow."""
    tmod, mod = mha_pair(E, H, add_bias_kv=True, add_zero_attn=True)
    assert tuple(mod.bias_k.shape) == (1, 1, E)
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, E), 1)
    tm, m = mask_pair(attention_mask("float", (L, S)))
    tkp, kp = mask_pair(padding_mask("float"))
    tout = tmod(tq, tk, tk, attn_mask=tm, key_padding_mask=tkp, need_weights=need_weights)
    out = mod(q, k, k, attn_mask=m, key_padding_mask=kp, need_weights=need_weights)
    if need_weights:
        assert tuple(out[1].shape) == (N, L, S + 2)
    check(tmod, mod, tout, out, [tq, tk], [q, k])


def test_no_bias():
    tmod, mod = mha_pair(E, H, bias=False)
    assert mod.in_proj_bias is None and mod.out_proj.bias is None
    tq, q = pair((L, N, E), 0)
    tk, k = pair((S, N, E), 1)
    check(tmod, mod, tmod(tq, tk, tk), mod(q, k, k), [tq, tk], [q, k])


@pytest.mark.parametrize("need_weights", [True, False])
def test_unbatched(need_weights):
    tmod, mod = mha_pair(E, H, batch_first=True)   # batch_first does not apply to 2-D
    tq, q = pair((L, E), 0)
    tk, k = pair((S, E), 1)
    tm, m = mask_pair(padding_mask("bool")[1])
    tam, am = mask_pair(attention_mask("bool", (H, L, S)))   # 3-D: (num_heads, L, S)
    tout = tmod(tq, tk, tk, key_padding_mask=tm, attn_mask=tam, need_weights=need_weights)
    out = mod(q, k, k, key_padding_mask=m, attn_mask=am, need_weights=need_weights)
    assert tuple(out[0].shape) == (L, E)
    check(tmod, mod, tout, out, [tq, tk], [q, k])


def test_fully_masked_row():
    """A batch entry whose every key is padded: PyTorch's weights (and output) are NaN
    there when the weights are computed explicitly; we match it."""
    tmod, mod = mha_pair(E, H)
    tq, q = pair((L, N, E), 0, requires_grad=False)
    pad = np.zeros((N, L), dtype=bool)
    pad[1] = True
    tm, m = mask_pair(pad)
    with torch.no_grad():
        tout = tmod(tq, tq, tq, key_padding_mask=tm)
    out = mod(q, q, q, key_padding_mask=m)
    for t, o in zip(tout, out):
        np.testing.assert_allclose(np.asarray(o.detach()), t.numpy(), rtol=RTOL, atol=ATOL,
                                   equal_nan=True)
    assert np.isnan(np.asarray(out[1])[1]).all() and not np.isnan(np.asarray(out[1])[0]).any()


def test_functional_form():
    """multi_head_attention_forward with static_k / static_v (precomputed heads)."""
    tmod, mod = mha_pair(E, H)
    tq, q = pair((L, N, E), 0)
    tsk, sk = pair((N * H, S, E // H), 1)
    tsv, sv = pair((N * H, S, E // H), 2)
    targs = (E, H, tmod.in_proj_weight, tmod.in_proj_bias, None, None, False, 0.0,
             tmod.out_proj.weight, tmod.out_proj.bias)
    args = (E, H, mod.in_proj_weight, mod.in_proj_bias, None, None, False, 0.0,
            mod.out_proj.weight, mod.out_proj.bias)
    tout = torch.nn.functional.multi_head_attention_forward(
        tq, tq, tq, *targs, static_k=tsk, static_v=tsv)
    out = tp.nn.modules.attention.multi_head_attention_forward(
        q, q, q, *args, static_k=sk, static_v=sv)
    check(tmod, mod, tout, out, [tq, tsk, tsv], [q, sk, sv])


# ---- MultiheadAttention: init, dropout, state dicts, errors -------------------------
def test_init():
    tp.manual_seed(0)
    mod = tp.nn.MultiheadAttention(64, 4, add_bias_kv=True)
    w = np.asarray(mod.in_proj_weight.detach())
    bound = np.sqrt(6 / (64 + 3 * 64))               # xavier_uniform_: fans (64, 192)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound
    assert not np.asarray(mod.in_proj_bias.detach()).any()
    assert not np.asarray(mod.out_proj.bias.detach()).any()
    out_w = np.asarray(mod.out_proj.weight.detach())   # Linear's own init
    assert np.abs(out_w).max() <= 1 / 8
    bias_k = np.asarray(mod.bias_k.detach())            # xavier_normal_: std 1/sqrt(64)
    assert 0.5 / 8 < bias_k.std() < 1.5 / 8
    assert set(mod.state_dict()) == set(torch.nn.MultiheadAttention(
        64, 4, add_bias_kv=True).state_dict())


def test_dropout_on_weights():
    """In training the attention weights go through dropout (p=0.5: 0 or 2x); in eval
    they do not."""
    tp.manual_seed(0)
    mod = tp.nn.MultiheadAttention(E, H, dropout=0.5)
    _, x = pair((L, N, E), 0, requires_grad=False)
    mod.eval()
    _, clean = mod(x, x, x, average_attn_weights=False)
    mod.train()
    _, dropped = mod(x, x, x, average_attn_weights=False)
    clean, dropped = np.asarray(clean), np.asarray(dropped)
    zero = dropped == 0
    assert zero.any() and not zero.all()
    np.testing.assert_allclose(dropped[~zero], 2 * clean[~zero], rtol=1e-6)
    out_train, _ = mod(x, x, x, need_weights=False)   # dropout inside the fused path too
    mod.eval()
    out_eval, _ = mod(x, x, x, need_weights=False)
    assert not np.allclose(np.asarray(out_train), np.asarray(out_eval))


def test_state_dict_round_trip_to_torch():
    mod = tp.nn.MultiheadAttention(E, H, kdim=5, vdim=3, add_bias_kv=True)
    tmod = torch.nn.MultiheadAttention(E, H, kdim=5, vdim=3, add_bias_kv=True)
    tmod.load_state_dict({k: torch.from_numpy(np.asarray(v).copy())
                          for k, v in mod.state_dict().items()})
    for k, v in tmod.state_dict().items():
        np.testing.assert_array_equal(np.asarray(mod.state_dict()[k]), v.numpy())


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        tp.nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="greater than 0"):
        tp.nn.MultiheadAttention(8, 0)


def test_bad_inputs():
    mod = tp.nn.MultiheadAttention(E, H)
    _, q = pair((L, N, E), 0, requires_grad=False)
    _, k = pair((S, N, E), 1, requires_grad=False)
    with pytest.raises(ShapeError, match="'query' must be 2-D .* or 3-D"):
        mod(q.unsqueeze(0), k.unsqueeze(0), k.unsqueeze(0))
    with pytest.raises(ShapeError, match="argument 'key' must be 3-D"):
        mod(q, k[0], k)
    with pytest.raises(ShapeError, match=r"embed_dim=8, but got shape \[3, 2, 4\]"):
        mod(q[..., :4], k[..., :4], k[..., :4])
    with pytest.raises(ShapeError, match=r"2-D attn_mask must have shape \[3, 4\], but got "
                                         r"\[4, 3\]"):
        mod(q, k, k, attn_mask=tp.zeros(S, L))
    with pytest.raises(ShapeError, match=r"3-D attn_mask must have shape \[4, 3, 4\]"):
        mod(q, k, k, attn_mask=tp.zeros(N, L, S))
    with pytest.raises(ShapeError, match=r"'key_padding_mask' must have shape \(N, S\) = "
                                         r"\[2, 4\], but got \[2, 3\]"):
        mod(q, k, k, key_padding_mask=tp.zeros(N, L, dtype=tp.bool))
    with pytest.raises(ShapeError, match="'key_padding_mask' must be 2-D"):
        mod(q, k, k, key_padding_mask=tp.zeros(S, dtype=tp.bool))
    with pytest.raises(DTypeError, match="'attn_mask' must be a bool or floating-point "
                                         "tensor, but got tensorplay.int64"):
        mod(q, k, k, attn_mask=tp.zeros(L, S, dtype=tp.int64))
    with pytest.raises(ValueError, match="is_causal=True needs the causal mask"):
        mod(q, q, q, is_causal=True)
    with pytest.raises(ShapeError, match="'key' and 'value' must agree"):
        mod(q, k, q)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        mod(q, k, k, attn_mask=tp.zeros(L, S), key_padding_mask=tp.zeros(N, S, dtype=tp.bool))


# ---- Transformer layers -------------------------------------------------------------
D, NH, FF = 8, 2, 16   # d_model, heads, feed-forward width


def layer_pair(cls, *args, **kwargs):
    torch.manual_seed(0)
    tmod = getattr(torch.nn, cls)(*args, **kwargs).eval()
    mod = getattr(tp.nn, cls)(*args, **kwargs).eval()
    copy_weights(tmod, mod)
    return tmod, mod


def stack_pair(kind, num_layers=2, norm=True, batch_first=False, **kwargs):
    """TransformerEncoder / TransformerDecoder of `num_layers` layers (and a final
    LayerNorm) in both libraries, tp's weights copied from torch's."""
    torch.manual_seed(0)
    tlayer = getattr(torch.nn, f"Transformer{kind}Layer")(D, NH, FF, dropout=0.0,
                                                          batch_first=batch_first, **kwargs)
    layer = getattr(tp.nn, f"Transformer{kind}Layer")(D, NH, FF, dropout=0.0,
                                                      batch_first=batch_first, **kwargs)
    extra = {"enable_nested_tensor": False} if kind == "Encoder" else {}
    tmod = getattr(torch.nn, f"Transformer{kind}")(
        tlayer, num_layers, torch.nn.LayerNorm(D) if norm else None, **extra).eval()
    mod = getattr(tp.nn, f"Transformer{kind}")(
        layer, num_layers, tp.nn.LayerNorm(D) if norm else None, **extra).eval()
    # The copies must be independent (deepcopy), so give every parameter its own values.
    with torch.no_grad():
        for p in tmod.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    copy_weights(tmod, mod)
    return tmod, mod


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer(norm_first, activation):
    tmod, mod = layer_pair("TransformerEncoderLayer", D, NH, FF, activation=activation,
                           norm_first=norm_first)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    tx, x = pair((L, N, D), 0)
    tm, m = mask_pair(attention_mask("bool", (L, L)))
    check(tmod, mod, tmod(tx, src_mask=tm), mod(x, src_mask=m), [tx], [x])


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder(norm_first):
    tmod, mod = stack_pair("Encoder", norm_first=norm_first, activation="gelu")
    assert sorted(mod.state_dict()) == sorted(tmod.state_dict())
    tx, x = pair((S, N, D), 0)
    tm, m = mask_pair(attention_mask("float", (S, S)))
    tkp, kp = mask_pair(padding_mask("float"))
    check(tmod, mod, tmod(tx, mask=tm, src_key_padding_mask=tkp),
          mod(x, mask=m, src_key_padding_mask=kp), [tx], [x])


@pytest.mark.parametrize("is_causal", [None, True])
def test_encoder_causal_batch_first(is_causal):
    """The causal mask (detected when is_causal is None) with bool padding, batch_first."""
    tmod, mod = stack_pair("Encoder", batch_first=True)
    tx, x = pair((N, S, D), 0)
    tcausal = torch.nn.Transformer.generate_square_subsequent_mask(S)
    causal = tp.nn.Transformer.generate_square_subsequent_mask(S)
    np.testing.assert_array_equal(np.asarray(causal), tcausal.numpy())
    tkp, kp = mask_pair(padding_mask("float"))
    check(tmod, mod, tmod(tx, mask=tcausal, src_key_padding_mask=tkp, is_causal=is_causal),
          mod(x, mask=causal, src_key_padding_mask=kp, is_causal=is_causal), [tx], [x])


def test_encoder_bool_padding_train_mode():
    """A bool key-padding mask with a module in training mode (dropout=0): the path where
    PyTorch runs no nested-tensor shortcut either."""
    tmod, mod = stack_pair("Encoder")
    tmod.train()
    mod.train()
    tx, x = pair((S, N, D), 0)
    tkp, kp = mask_pair(padding_mask("bool"))
    check(tmod, mod, tmod(tx, src_key_padding_mask=tkp), mod(x, src_key_padding_mask=kp),
          [tx], [x])


def test_encoder_unbatched_no_bias():
    tmod, mod = stack_pair("Encoder", num_layers=1, norm=False, bias=False)
    tx, x = pair((S, D), 0)
    tkp, kp = mask_pair(padding_mask("bool")[0])
    check(tmod, mod, tmod(tx, src_key_padding_mask=tkp), mod(x, src_key_padding_mask=kp),
          [tx], [x])


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_decoder(norm_first):
    tmod, mod = stack_pair("Decoder", norm_first=norm_first)
    assert sorted(mod.state_dict()) == sorted(tmod.state_dict())
    ttgt, tgt = pair((L, N, D), 0)
    tmem, mem = pair((S, N, D), 1)
    tcausal = torch.nn.Transformer.generate_square_subsequent_mask(L)
    causal = tp.from_numpy(tcausal.numpy())
    tmm, mm = mask_pair(attention_mask("bool", (L, S)))
    tkp, kp = mask_pair(padding_mask("bool"))
    ttp, tp_ = mask_pair(np.array([[False, False, True], [False, False, False]]))
    tout = tmod(ttgt, tmem, tgt_mask=tcausal, memory_mask=tmm, memory_key_padding_mask=tkp,
                tgt_key_padding_mask=ttp.float().masked_fill(ttp, float("-inf")))
    out = mod(tgt, mem, tgt_mask=causal, memory_mask=mm, memory_key_padding_mask=kp,
              tgt_key_padding_mask=tp.from_numpy(np.where(ttp.numpy(), -np.inf, 0)
                                                 .astype(np.float32)))
    check(tmod, mod, tout, out, [ttgt, tmem], [tgt, mem])


def test_decoder_layer_callable_activation():
    tmod, mod = layer_pair("TransformerDecoderLayer", D, NH, FF, batch_first=True)
    tmod.activation = torch.nn.functional.silu
    mod.activation = tp.nn.functional.silu
    ttgt, tgt = pair((N, L, D), 0)
    tmem, mem = pair((N, S, D), 1)
    causal = np.triu(np.full((L, L), -np.inf, np.float32), 1)
    tc, c = mask_pair(causal)
    check(tmod, mod, tmod(ttgt, tmem, tgt_mask=tc, tgt_is_causal=True),
          mod(tgt, mem, tgt_mask=c, tgt_is_causal=True), [ttgt, tmem], [tgt, mem])


def test_transformer():
    kwargs = dict(d_model=D, nhead=NH, num_encoder_layers=1, num_decoder_layers=2,
                  dim_feedforward=FF, dropout=0.0)
    torch.manual_seed(0)
    tmod = torch.nn.Transformer(**kwargs).eval()
    mod = tp.nn.Transformer(**kwargs).eval()
    assert sorted(mod.state_dict()) == sorted(tmod.state_dict())
    copy_weights(tmod, mod)
    tsrc, src = pair((S, N, D), 0)
    ttgt, tgt = pair((L, N, D), 1)
    tcausal = torch.nn.Transformer.generate_square_subsequent_mask(L)
    causal = tp.nn.Transformer.generate_square_subsequent_mask(L)
    tkp, kp = mask_pair(padding_mask("bool"))
    tout = tmod(tsrc, ttgt, tgt_mask=tcausal, src_key_padding_mask=tkp,
                memory_key_padding_mask=tkp)
    out = mod(src, tgt, tgt_mask=causal, src_key_padding_mask=kp, memory_key_padding_mask=kp)
    check(tmod, mod, tout, out, [tsrc, ttgt], [src, tgt])


def test_transformer_init():
    """Every weight matrix is xavier_uniform_ (in_proj: fans (64, 192); linear1: (64, 96))."""
    tp.manual_seed(0)
    mod = tp.nn.Transformer(64, 4, 1, 1, 96)
    w = np.asarray(mod.encoder.layers[0].linear1.weight.detach())
    bound = np.sqrt(6 / (64 + 96))
    assert bound * 0.95 < np.abs(w).max() <= bound
    ln = mod.decoder.norm
    assert np.asarray(ln.weight.detach()).min() == 1 and not np.asarray(ln.bias.detach()).any()


def test_clones_are_independent():
    layer = tp.nn.TransformerEncoderLayer(D, NH, FF)
    enc = tp.nn.TransformerEncoder(layer, 2)
    a, b = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert a is not b and a is not layer.linear1.weight
    np.testing.assert_array_equal(np.asarray(a.detach()), np.asarray(b.detach()))
    with tp.no_grad():
        a.add_(1.0)
    assert not np.allclose(np.asarray(a.detach()), np.asarray(b.detach()))
    assert a.requires_grad and type(a) is tp.nn.Parameter


def test_transformer_dropout_in_training():
    tp.manual_seed(0)
    layer = tp.nn.TransformerEncoderLayer(D, NH, FF, dropout=0.5)
    _, x = pair((L, N, D), 0, requires_grad=False)
    train_out = np.asarray(layer(x))
    layer.eval()
    eval_a, eval_b = np.asarray(layer(x)), np.asarray(layer(x))
    np.testing.assert_array_equal(eval_a, eval_b)
    assert not np.allclose(train_out, eval_a)


def test_transformer_bad_arguments():
    with pytest.raises(ValueError, match="activation should be 'relu', 'gelu' or a "
                                         "callable, but got 'tanh'"):
        tp.nn.TransformerEncoderLayer(D, NH, activation="tanh")
    with pytest.raises(TypeError, match="encoder_layer must be a Module"):
        tp.nn.TransformerEncoder("layer", 2)
    mod = tp.nn.Transformer(D, NH, 1, 1, FF)
    _, src = pair((S, N, D), 0, requires_grad=False)
    _, tgt = pair((L, N + 1, D), 1, requires_grad=False)
    with pytest.raises(ShapeError, match="same batch size"):
        mod(src, tgt)
    with pytest.raises(ShapeError, match="must be d_model=8"):
        mod(src[..., :4], tgt[:, :N, :4])


def test_cuda_matches_cpu():
    """A tiny encoder-decoder on the `cuda` device (Triton kernels; the interpreter
    without a GPU) gives the CPU's values and gradients."""
    util = pytest.importorskip("triton_util")
    tp.manual_seed(0)
    cpu = tp.nn.Transformer(D, NH, 1, 1, FF, dropout=0.0).eval()
    gpu = copy.deepcopy(cpu).to(util.CUDA)
    _, src = pair((L, N, D), 0)
    _, tgt = pair((L, N, D), 1)
    causal = tp.nn.Transformer.generate_square_subsequent_mask(L)
    kp = tp.from_numpy(np.array([[False, False, True], [False, False, False]]))
    out = cpu(src, tgt, tgt_mask=causal, src_key_padding_mask=kp)
    src_g = src.detach().to(util.CUDA).requires_grad_()
    out_g = gpu(src_g, tgt.detach().to(util.CUDA), tgt_mask=causal.to(util.CUDA),
                src_key_padding_mask=kp.to(util.CUDA))
    util.assert_same(out_g, out, rtol=1e-4, atol=1e-5)
    out.sum().backward()
    out_g.sum().backward()
    np.testing.assert_allclose(util.host(src_g.grad), util.host(src.grad), rtol=1e-4,
                               atol=1e-5)
    for (name, p), p_g in zip(cpu.named_parameters(), gpu.parameters()):
        np.testing.assert_allclose(util.host(p_g.grad), util.host(p.grad), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_multi_head_attention_forward_is_served_by_functional():
    """F.multi_head_attention_forward is the function MultiheadAttention calls, as in
    PyTorch."""
    from tensorplay.nn.modules import attention
    assert tp.nn.functional.multi_head_attention_forward is \
        attention.multi_head_attention_forward
