"""Automatic mixed precision against PyTorch: `tp.autocast` (the cast policies of
ops.yaml, generated into the Autocast* slots), its state and cache, and `GradScaler`.

PyTorch is the oracle for the CPU: each op of the CPU policy table runs under
`tp.autocast("cpu")` and `torch.autocast("cpu")` on the same inputs, and the results
must agree in dtype and (to bfloat16 precision) in value. PyTorch's CUDA autocast cannot
run here, so the CUDA table is checked against PyTorch's lists as data, and one op runs
on the `cuda` device through the Triton interpreter.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._generated.autocast_wrappers import POLICIES
from tensorplay.amp import state as amp_state
from tensorplay.codegen.yaml_loader import CodegenError, load_ops
from tensorplay.dispatch import DispatchKey, IncludeKeys
from tensorplay.dispatch.dispatcher import FALLTHROUGH
from tensorplay.errors import AmpError, ArgumentError

BF16 = {"tp": tp.bfloat16, "torch": torch.bfloat16}


def _mod(m):
    return tp if m == "tp" else torch


def _t(m, array, dtype="float32", requires_grad=False):
    """The same values as a tp or a torch tensor of `dtype`."""
    mod = _mod(m)
    t = mod.tensor(np.asarray(array), dtype=getattr(mod, dtype))
    return t.requires_grad_(requires_grad) if requires_grad else t


def _data(shape, seed, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


LABELS = np.array([1, 0, 3])

# op -> (call(m, d, e): d, e are the dtypes of the first and of the other float inputs).
CPU_CASES = {
    "mm": lambda m, d, e: _mod(m).mm(_t(m, _data((3, 4), 0), d), _t(m, _data((4, 2), 1), e)),
    "bmm": lambda m, d, e: _mod(m).bmm(_t(m, _data((2, 3, 4), 0), d),
                                      _t(m, _data((2, 4, 2), 1), e)),
    "matmul": lambda m, d, e: _mod(m).matmul(_t(m, _data((3, 4), 0), d), _t(m, _data(4, 1), e)),
    "addmm": lambda m, d, e: _mod(m).addmm(_t(m, _data(2, 2), d), _t(m, _data((3, 4), 0), e),
                                          _t(m, _data((4, 2), 1), e)),
    "baddbmm": lambda m, d, e: _mod(m).baddbmm(_t(m, _data(2, 2), d),
                                              _t(m, _data((2, 3, 4), 0), e),
                                              _t(m, _data((2, 4, 2), 1), e)),
    "linear": lambda m, d, e: _mod(m).nn.functional.linear(
        _t(m, _data((3, 4), 0), d), _t(m, _data((2, 4), 1), e), _t(m, _data(2, 2), e)),
    "convolution": lambda m, d, e: _mod(m).nn.functional.conv2d(
        _t(m, _data((1, 2, 5, 5), 0), d), _t(m, _data((3, 2, 3, 3), 1), e),
        _t(m, _data(3, 2), e)),
    "prelu": lambda m, d, e: _mod(m).nn.functional.prelu(_t(m, _data((2, 3), 0), d),
                                                        _t(m, [0.25, 0.5, 0.1], e)),
    "scaled_dot_product_attention": lambda m, d, e: _mod(m).nn.functional.
    scaled_dot_product_attention(_t(m, _data((1, 3, 4), 0), d), _t(m, _data((1, 3, 4), 1), e),
                                 _t(m, _data((1, 3, 4), 2), e)),
    "cdist": lambda m, d, e: _mod(m).cdist(_t(m, _data((3, 4), 0), d), _t(m, _data((2, 4), 1), e)),
    "trace": lambda m, d, e: _mod(m).trace(_t(m, _data((3, 3), 0), d)),
    "prod": lambda m, d, e: _mod(m).prod(_t(m, _data(5, 0, 0.5, 1.5), d)),
    "prod.dim_int": lambda m, d, e: _mod(m).prod(_t(m, _data((2, 3), 0, 0.5, 1.5), d), 1),
    "mse_loss": lambda m, d, e: _mod(m).nn.functional.mse_loss(_t(m, _data(4, 0), d),
                                                              _t(m, _data(4, 1), e)),
    "l1_loss": lambda m, d, e: _mod(m).nn.functional.l1_loss(_t(m, _data(4, 0), d),
                                                            _t(m, _data(4, 1), e)),
    "smooth_l1_loss": lambda m, d, e: _mod(m).nn.functional.smooth_l1_loss(
        _t(m, _data(4, 0), d), _t(m, _data(4, 1), e)),
    "huber_loss": lambda m, d, e: _mod(m).nn.functional.huber_loss(_t(m, _data(4, 0), d),
                                                                  _t(m, _data(4, 1), e)),
    "kl_div": lambda m, d, e: _mod(m).nn.functional.kl_div(
        _t(m, _data(4, 0, -2.0, -0.1), d), _t(m, _data(4, 1, 0.1, 1.0), e),
        reduction="batchmean"),
    "nll_loss": lambda m, d, e: _mod(m).nn.functional.nll_loss(
        _t(m, _data((3, 4), 0, -2.0, -0.1), d), _mod(m).tensor(LABELS)),
    "cross_entropy_loss": lambda m, d, e: _mod(m).nn.functional.cross_entropy(
        _t(m, _data((3, 4), 0), d), _mod(m).tensor(LABELS)),
    "binary_cross_entropy": lambda m, d, e: _mod(m).nn.functional.binary_cross_entropy(
        _t(m, _data(4, 0, 0.1, 0.9), d), _t(m, _data(4, 1, 0.0, 1.0), e)),
    "binary_cross_entropy_with_logits": lambda m, d, e: _mod(m).nn.functional.
    binary_cross_entropy_with_logits(_t(m, _data(4, 0), d), _t(m, _data(4, 1, 0.0, 1.0), e)),
    "margin_ranking_loss": lambda m, d, e: _mod(m).nn.functional.margin_ranking_loss(
        _t(m, _data(4, 0), d), _t(m, _data(4, 1), e), _t(m, [1.0, -1.0, 1.0, -1.0], e)),
    "cosine_embedding_loss": lambda m, d, e: _mod(m).nn.functional.cosine_embedding_loss(
        _t(m, _data((3, 4), 0), d), _t(m, _data((3, 4), 1), e), _t(m, [1.0, -1.0, 1.0], e)),
    "cat": lambda m, d, e: _mod(m).cat([_t(m, _data((2, 2), 0), d), _t(m, _data((1, 2), 1), e)]),
    "stack": lambda m, d, e: _mod(m).stack([_t(m, _data(3, 0), d), _t(m, _data(3, 1), e)]),
    "einsum": lambda m, d, e: _mod(m).einsum("ij,jk->ik", _t(m, _data((3, 4), 0), d),
                                            _t(m, _data((4, 2), 1), e)),
    "index_copy": lambda m, d, e: _mod(m).index_copy(
        _t(m, _data((3, 2), 0), d), 0, _mod(m).tensor([2, 0]), _t(m, _data((2, 2), 1), e)),
    # the FFT: a bfloat16 input is transformed in float32 (a complex64 result)
    **{f"fft_{name}": (lambda name: lambda m, d, e: getattr(_mod(m).fft, name)(
        _t(m, _data((4, 6), 0), d)))(name)
       for name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                    "irfft2", "rfftn", "irfftn", "hfft", "ihfft")},
}

# (first, others): all float32, all bfloat16, mixed both ways, and float64 (never cast).
DTYPE_MIXES = [("float32", "float32"), ("bfloat16", "bfloat16"), ("float32", "bfloat16"),
               ("bfloat16", "float32"), ("float64", "float64")]


def test_every_cpu_policy_op_has_a_case():
    # _lstm_sequence and _gru_sequence (nn.LSTM's and nn.GRU's recurrences) have no torch
    # twin: test_recurrent_layers_match_torch covers them.
    assert set(CPU_CASES) | {"_lstm_sequence", "_gru_sequence"} == set(POLICIES["CPU"])


def _run(m, op, mix):
    with _mod(m).autocast("cpu"):
        return CPU_CASES[op](m, *mix)


@pytest.mark.parametrize("op", sorted(CPU_CASES))
def test_cpu_policy_matches_torch(op):
    for mix in DTYPE_MIXES:
        expected = _run("torch", op, mix)
        got = _run("tp", op, mix)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (op, mix)
        want = expected.detach().double().numpy()
        np.testing.assert_allclose(np.asarray(got.detach().double()), want, rtol=3e-2,
                                   atol=3e-2, err_msg=f"{op} {mix}")


# einsum is a chain of pairwise products in PyTorch: bmm (autocast) for a pair contracted
# over a shared letter, mul (promotes) for any other, so its result dtype depends on the
# equation: (equation, operand shapes, operand dtypes).
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)], ["bfloat16", "float32"]),
    ("i,j->ij", [(3,), (4,)], ["float32", "float32"]),
    ("ij,kl->ijkl", [(3, 4), (2, 2)], ["bfloat16", "float32"]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ["float32", "float32"]),
    ("ij,ij->i", [(3, 4), (3, 4)], ["bfloat16", "float32"]),
    ("ii->i", [(3, 3)], ["float32"]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)], ["float32", "float32", "float32"]),
    ("ij,jk,l->ikl", [(3, 4), (4, 5), (2,)], ["float32", "float32", "float32"]),
    ("i,j,ij->", [(3,), (4,), (3, 4)], ["float32", "float32", "float32"]),
]


@pytest.mark.parametrize("equation,shapes,dtypes", EINSUM_CASES)
def test_einsum_under_autocast_matches_torch(equation, shapes, dtypes):
    def run(m):
        operands = [_t(m, _data(s, i), d, requires_grad=True)
                    for i, (s, d) in enumerate(zip(shapes, dtypes))]
        with _mod(m).autocast("cpu"):
            out = _mod(m).einsum(equation, *operands)
        out.float().sum().backward()
        return out, [x.grad for x in operands]
    (expected, expected_grads), (got, grads) = run("torch"), run("tp")
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(got.detach().double()),
                               expected.detach().double().numpy(), rtol=3e-2, atol=3e-2)
    for g, w in zip(grads, expected_grads):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(g.double()), w.double().numpy(), rtol=3e-2,
                                   atol=5e-2)


@pytest.mark.parametrize("call", [
    lambda m, x: m.exp(x), lambda m, x: x.sum(), lambda m, x: m.softmax(x, 0),
    lambda m, x: x * 2 + x,
])
def test_ops_without_a_cpu_policy_fall_through(call):
    for dtype in ("float32", "bfloat16"):
        with torch.autocast("cpu"):
            expected = call(torch, _t("torch", _data(3, 0), dtype))
        with tp.autocast("cpu"):
            got = call(tp, _t("tp", _data(3, 0), dtype))
        assert got.dtype.name == str(expected.dtype).split(".")[-1]


# PyTorch's CUDA lists (aten/src/ATen/autocast_mode.h), for the ops TensorPlay has. conv*
# and conv_transpose* reach `convolution`; `norm.str`, `cross_entropy_loss` are noted in
# ops.yaml (PyTorch reaches float32 for them through the ops it decomposes them into);
# `_lstm_sequence` and `_gru_sequence` stand for _cudnn_rnn
# (aten/src/ATen/native/cudnn/AutocastRNN.cpp).
TORCH_CUDA_LISTS = {
    "lower": "convolution prelu addmm addmv matmul einsum mm mv linear baddbmm bmm "
             "scaled_dot_product_attention _lstm_sequence _gru_sequence",
    "fp32": "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan "
            "pow.Tensor_Scalar pow.Tensor_Tensor softplus layer_norm native_layer_norm "
            "group_norm cosine_similarity cosine_embedding_loss nll_loss kl_div l1_loss "
            "smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
            "binary_cross_entropy_with_logits dist cdist logsumexp upsample_nearest2d "
            "upsample_bilinear2d cross_entropy_loss",
    "fp32_set_opt_dtype": "prod prod.dim_int softmax.int log_softmax.int cumprod cumsum "
                          "linalg_vector_norm linalg_matrix_norm linalg_matrix_norm.str_ord "
                          "sum sum.dim_IntList norm.ScalarOpt_dim norm.str",
    "promote": "addcdiv addcmul atan2 dot index_put tensordot tensordot.dims scatter_add",
    "banned": "binary_cross_entropy",
}


def test_cuda_policy_table_is_torchs():
    expected = {op: policy for policy, ops in TORCH_CUDA_LISTS.items() for op in ops.split()}
    assert POLICIES["CUDA"] == expected


def test_cuda_autocast_through_the_interpreter():
    if not tp.cuda.is_interpreted() and not tp.cuda.is_available():
        pytest.skip("no GPU and no Triton interpreter")
    a = tp.tensor(_data((4, 8), 0), device="cuda")
    b = tp.tensor(_data((8, 4), 1), device="cuda")
    with tp.cuda.amp.autocast():
        out = tp.mm(a, b)
        assert out.dtype is tp.float16 and out.device.type == "cuda"
        assert tp.exp(out).dtype is tp.float32          # fp32 on CUDA (not on the CPU)
        assert tp.mm(a.cpu(), b.cpu()).dtype is tp.float32   # CPU tensors: not this device
        with pytest.raises(AmpError, match="binary_cross_entropy_with_logits"):
            tp.nn.functional.binary_cross_entropy(a.sigmoid(), a.sigmoid())
    expected = torch.tensor(_data((4, 8), 0)).half().float() @ torch.tensor(_data((8, 4), 1)) \
        .half().float()
    np.testing.assert_allclose(np.asarray(out.cpu().double()), expected.numpy(), rtol=1e-2,
                               atol=1e-2)


def _cuda(*shape):
    return tp.tensor(_data(shape, 0, 0.1, 1.0), device="cuda")


# One call per policy kind on the `cuda` device, with the dtype PyTorch's CUDA autocast
# gives (float16 inputs unless said otherwise).
CUDA_CASES = [
    ("sum", lambda F: _cuda(3, 4).half().sum(), tp.float32),
    ("sum.dim_IntList", lambda F: _cuda(3, 4).half().sum(1), tp.float32),
    ("softmax.int", lambda F: F.softmax(_cuda(3, 4).half(), 1), tp.float32),
    ("cumsum", lambda F: _cuda(3, 4).half().cumsum(1), tp.float32),
    ("prod", lambda F: _cuda(4).half().prod(), tp.float32),
    ("norm.ScalarOpt_dim", lambda F: _cuda(3, 4).half().norm(), tp.float32),
    ("layer_norm", lambda F: F.layer_norm(_cuda(3, 4).half(), (4,)), tp.float32),
    ("sum, dtype given", lambda F: _cuda(3, 4).half().sum(dtype=tp.float16), tp.float16),
    ("sum, float64", lambda F: _cuda(3, 4).double().sum(), tp.float64),
    ("exp", lambda F: _cuda(3).half().exp(), tp.float32),
    ("pow.Tensor_Scalar", lambda F: _cuda(3).half() ** 2, tp.float32),
    ("mse_loss", lambda F: F.mse_loss(_cuda(4).half(), _cuda(4).half()), tp.float32),
    ("addcmul (mixed)", lambda F: tp.addcmul(_cuda(3), _cuda(3).half(), _cuda(3).half()),
     tp.float32),
    ("addcmul", lambda F: tp.addcmul(_cuda(3).half(), _cuda(3).half(), _cuda(3).half()),
     tp.float16),
    ("linear (float32)", lambda F: F.linear(_cuda(2, 4), _cuda(3, 4), _cuda(3)), tp.float16),
    ("convolution (float32)", lambda F: F.conv2d(_cuda(1, 2, 5, 5), _cuda(3, 2, 3, 3)),
     tp.float16),
    ("einsum (float32)", lambda F: tp.einsum("ij,jk->ik", _cuda(2, 3), _cuda(3, 2)), tp.float16),
]


def test_cuda_policies_through_the_interpreter():
    if not tp.cuda.is_interpreted() and not tp.cuda.is_available():
        pytest.skip("no GPU and no Triton interpreter")
    for name, call, dtype in CUDA_CASES:
        with tp.autocast("cuda"):
            assert call(tp.nn.functional).dtype is dtype, name


# ---- state: nesting, enabled=False, threads, decorator, guard -------------------------
def test_nesting_and_disabled_regions_restore_state():
    a, b = tp.ones(2, 2), tp.ones(2, 2)
    assert not tp.is_autocast_enabled("cpu")
    with tp.autocast("cpu"):
        assert tp.mm(a, b).dtype is tp.bfloat16
        with tp.autocast("cpu", dtype=tp.float16):
            assert tp.get_autocast_dtype("cpu") is tp.float16
            assert tp.mm(a, b).dtype is tp.float16
        with tp.autocast("cpu", enabled=False):
            assert not tp.is_autocast_enabled("cpu")
            assert tp.mm(a, b).dtype is tp.float32
        assert tp.is_autocast_enabled("cpu") and tp.get_autocast_dtype("cpu") is tp.bfloat16
        assert tp.mm(a, b).dtype is tp.bfloat16
    assert not tp.is_autocast_enabled("cpu")
    assert tp.dispatch.tls_local_key_sets()[0] == tp.dispatch.DispatchKeySet()
    assert tp.mm(a, b).dtype is tp.float32


def test_set_autocast_enabled_and_dtype_switch_the_key():
    bit = 1 << DispatchKey.AutocastCPU
    try:
        tp.set_autocast_enabled("cpu", True)
        tp.set_autocast_dtype("cpu", tp.float16)
        assert tp.dispatch.tls_local_key_sets()[0].bits & bit
        assert tp.mm(tp.ones(2, 2), tp.ones(2, 2)).dtype is tp.float16
    finally:
        tp.set_autocast_enabled("cpu", False)
        tp.set_autocast_dtype("cpu", tp.bfloat16)
    assert not tp.dispatch.tls_local_key_sets()[0].bits & bit
    assert tp.mm(tp.ones(2, 2), tp.ones(2, 2)).dtype is tp.float32


def test_state_is_per_thread():
    seen = {}

    def worker():
        seen["enabled"] = tp.is_autocast_enabled("cpu")
        seen["dtype"] = tp.mm(tp.ones(2, 2), tp.ones(2, 2)).dtype

    with tp.autocast("cpu"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert tp.mm(tp.ones(2, 2), tp.ones(2, 2)).dtype is tp.bfloat16
    assert seen == {"enabled": False, "dtype": tp.float32}


def test_decorator_and_device_aliases():
    @tp.autocast("cpu")
    def forward(x, w):
        return x @ w

    x = tp.ones(2, 3)
    assert forward(x, tp.ones(3, 2)).dtype is tp.bfloat16
    assert not tp.is_autocast_enabled("cpu")
    with tp.cpu.amp.autocast():
        assert tp.mm(x, tp.ones(3, 2)).dtype is tp.bfloat16
    with tp.amp.autocast("cpu", dtype=tp.float16):
        assert tp.mm(x, tp.ones(3, 2)).dtype is tp.float16


def test_bad_arguments_and_unsupported_dtype():
    with pytest.raises(ArgumentError, match="'device_type' must be 'cpu' or 'cuda'"):
        tp.autocast("tpu")
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        region = tp.autocast("cpu", dtype=tp.float64)
    with region:
        assert not tp.is_autocast_enabled("cpu")


def test_guard_autocast_key_without_autocast_raises():
    with IncludeKeys(1 << DispatchKey.AutocastCPU):
        with pytest.raises(AmpError, match="autocast is disabled for device_type 'cpu'"):
            tp.mm(tp.ones(2, 2), tp.ones(2, 2))


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_match_torch(cls):
    """nn.LSTM runs its recurrence in bfloat16 (PyTorch: mkldnn_rnn_layer), nn.GRU its in
    float32 (torch.gru is on no CPU list); RNN composes listed and unlisted ops; all come
    out in PyTorch's dtypes."""
    results = {}
    for m in ("tp", "torch"):
        mod = _mod(m)
        layer = getattr(mod.nn, cls)(4, 5, batch_first=True)
        rng = np.random.default_rng(0)
        with mod.no_grad():
            for p in layer.parameters():
                p.copy_(mod.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
        x = _t(m, _data((2, 3, 4), 1), requires_grad=True)
        with mod.autocast("cpu"):
            out, _ = layer(x)
        out.float().sum().backward()
        results[m] = (out, x.grad, layer.weight_hh_l0.grad)
    for got, want in zip(results["tp"], results["torch"]):
        assert got.dtype.name == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(got.detach().double()),
                                   want.detach().double().numpy(), rtol=3e-2, atol=3e-2)


MODULES = {   # name -> (build(nn), input shape); mixed float32/bfloat16 inputs inside
    "conv+batchnorm": (lambda nn: nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)),
                       (1, 2, 6, 6)),
    "linear+layernorm": (lambda nn: nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6)), (3, 4)),
    "conv+groupnorm": (lambda nn: nn.Sequential(nn.Conv2d(2, 4, 3), nn.GroupNorm(2, 4)),
                       (1, 2, 6, 6)),
    "transformer": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                          dropout=0.0), (2, 3, 8)),
    "conv_transpose+upsample": (lambda nn: nn.Sequential(
        nn.ConvTranspose2d(2, 3, 3), nn.Upsample(scale_factor=2, mode="bilinear")), (1, 2, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_train_under_autocast_in_torchs_dtypes(name):
    build, shape = MODULES[name]
    dtypes = []
    for m in ("tp", "torch"):
        mod = _mod(m)
        layer = build(mod.nn)
        with mod.autocast("cpu"):
            out = layer(_t(m, _data(shape, 0)))
        out.float().sum().backward()
        dtypes.append(str(out.dtype).split(".")[-1])
        assert all(str(p.grad.dtype).endswith("float32") for p in layer.parameters())
    assert dtypes[0] == dtypes[1]


# ---- the cast cache, explain() and dump() ---------------------------------------------
def _cast_lines(lines, arg):
    return [ln.strip() for ln in lines if ln.strip().startswith(f"cast      {arg}:")]


def test_weight_cast_once_per_region():
    w = tp.tensor(_data((4, 3), 0), requires_grad=True)
    x = tp.tensor(_data((2, 4), 1))
    with tp.autocast("cpu"):
        with tp.dispatch.explain(file=False) as log:
            y = tp.mm(x, w) + tp.mm(x * 2, w)
        assert len(amp_state.state.cache) == 1
    assert amp_state.state.cache == {}
    assert _cast_lines(log.lines, "mat2") == ["cast      mat2: float32 -> bfloat16",
                                              "cast      mat2: float32 -> bfloat16 (cached)"]
    y.float().sum().backward()
    tw = torch.tensor(_data((4, 3), 0), requires_grad=True)
    tx = torch.tensor(_data((2, 4), 1))
    with torch.autocast("cpu"):
        ty = torch.mm(tx, tw) + torch.mm(tx * 2, tw)
    ty.float().sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad), tw.grad.numpy(), rtol=2e-2, atol=2e-2)

    with tp.autocast("cpu", cache_enabled=False):
        with tp.dispatch.explain(file=False) as log:
            tp.mm(x, w) + tp.mm(x, w)
        assert amp_state.state.cache == {}
    assert len(_cast_lines(log.lines, "mat2")) == 2 and "cached" not in log.text


def test_explain_and_dump_show_the_autocast_slot():
    with tp.autocast("cpu"):
        with tp.dispatch.explain(file=False) as log:
            tp.mm(tp.ones(2, 2), tp.ones(2, 2, dtype=tp.bfloat16))
    text = log.text
    assert "dispatch  AutocastCPU -> tensorplay._generated.autocast_wrappers.mm_cpu" in text
    assert "cast      self: float32 -> bfloat16" in text
    assert "mat2" not in "".join(_cast_lines(log.lines, "mat2"))    # already bfloat16
    assert "excluded {AutocastCPU}" in text                         # the redispatch
    dump = tp.dispatch.op("mm").dump()
    assert "AutocastCPU    tensorplay._generated.autocast_wrappers.mm_cpu" in dump
    assert "AutocastCUDA   tensorplay._generated.autocast_wrappers.mm_cuda" in dump
    add = tp.dispatch.op("add.Tensor")
    assert "Autocast" not in add.dump()
    assert add.resolved[DispatchKey.AutocastCPU] is FALLTHROUGH     # no wrapper work at all


# ---- codegen: the policy field of ops.yaml is checked -----------------------------------
@pytest.mark.parametrize("field, message", [
    ("autocast: lowr",
     "ops.yaml:2: 'foo': unknown autocast policy 'lowr' (did you mean 'lower'?)"),
    ("autocast: {CPU: lower, XPU: fp32}",
     "ops.yaml:2: 'foo': autocast has no device key 'XPU'"),
    ("autocast: {CPU: fp32_set_opt_dtype}",
     "ops.yaml:2: 'foo': policy fp32_set_opt_dtype needs a 'ScalarType? dtype' argument"),
])
def test_codegen_rejects_bad_policies(field, message):
    text = f"- func: foo(Tensor self) -> Tensor\n  {field}\n"
    with pytest.raises(CodegenError) as info:
        load_ops(text, "ops.yaml")
    assert str(info.value).startswith(message)


def test_codegen_reads_policies():
    text = "- func: foo(Tensor self) -> Tensor\n  autocast: {CPU: fp32, CUDA: lower}\n"
    assert load_ops(text, "ops.yaml")[0].autocast == (("CPU", "fp32"), ("CUDA", "lower"))
    text = "- func: foo(Tensor self) -> Tensor\n  autocast: promote\n"
    assert load_ops(text, "ops.yaml")[0].autocast == (("CPU", "promote"), ("CUDA", "promote"))


# ---- GradScaler -------------------------------------------------------------------------
def _mlp(m, seed=0):
    nn = _mod(m).nn
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        with _mod(m).no_grad():
            p.copy_(_mod(m).tensor(rng.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    return model


def _train(m, steps):
    mod = _mod(m)
    model = _mlp(m)
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = mod.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    scales, params = [], []
    for step, x in enumerate(steps):
        opt.zero_grad()
        with mod.autocast("cpu", dtype=BF16[m]):
            out = model(mod.tensor(x))
            assert out.dtype == BF16[m]
            loss = mod.nn.functional.mse_loss(out, mod.tensor(_data((4, 3), 100 + step)))
            assert loss.dtype == mod.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        params.append([p.detach().double().numpy().copy() if m == "torch"
                       else np.asarray(p.detach().double()) for p in model.parameters()])
    return scales, params, scaler


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_mlp_training_with_grad_scaler_matches_torch():
    steps = [_data((4, 6), s) for s in range(5)]
    steps[2] = steps[2].copy()
    steps[2][1, 3] = np.inf                   # an inf gradient: the step is skipped
    tp_scales, tp_params, tp_scaler = _train("tp", steps)
    torch_scales, torch_params, torch_scaler = _train("torch", steps)
    assert tp_scales == torch_scales == [2.0 ** 10, 2.0 ** 11, 2.0 ** 10, 2.0 ** 10, 2.0 ** 11]
    for got, want in zip(tp_params[2], tp_params[1]):
        np.testing.assert_array_equal(got, want)          # skipped: unchanged
    for step, (got, want) in enumerate(zip(tp_params, torch_params)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-2, atol=2e-2, err_msg=f"step {step}")
    assert tp_scaler.state_dict() == torch_scaler.state_dict()


def test_grad_scaler_order_checks_and_state_dict():
    w = tp.ones(2, requires_grad=True)
    opt = tp.optim.SGD([w], lr=0.1)
    scaler = tp.amp.GradScaler("cpu", init_scale=8.0)
    with pytest.raises(AmpError, match="did not use scaler.scale"):
        scaler.step(opt)
    scaler.scale(w.sum()).backward()
    assert w.grad.tolist() == [8.0, 8.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [1.0, 1.0]
    with pytest.raises(AmpError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(AmpError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update(new_scale=4.0)
    assert scaler.get_scale() == 4.0
    other = tp.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.state_dict() == scaler.state_dict()
    v = tp.ones(2)
    assert [t.tolist() for t in scaler.scale([v, (v,)])[1]] == [[4.0, 4.0]]
    disabled = tp.amp.GradScaler("cpu", enabled=False)
    assert not disabled.is_enabled() and disabled.scale(w) is w and disabled.state_dict() == {}
