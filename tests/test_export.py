"""tp.export.export: a module's forward captured through the dispatcher (a dispatch mode
records every op), printed, drawn, replayed (`ep.module()` gives eager's values), with
parameters and buffers lifted to inputs and dynamic dims recorded."""
import pytest
import torch

import tensorplay as tp
from tensorplay import nn
from tensorplay.export import Dim, ExportError
from tensorplay.train.models import CharTransformer, DigitsCNN, DigitsMLP


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(tp.relu(self.fc1(x)))


def small_transformer():
    return CharTransformer(20, context=8, d_model=16, nhead=2, num_layers=1)


MODELS = {
    "mlp": (DigitsMLP, lambda n: tp.randn(n, 8, 8)),
    "cnn": (DigitsCNN, lambda n: tp.randn(n, 1, 8, 8)),
    "transformer": (small_transformer, lambda n: tp.randint(0, 20, (n, 8))),
}


def eager(model, x):
    with tp.no_grad():
        return model(x)


def test_graph_prints_as_python_one_line_per_op():
    tp.manual_seed(0)
    ep = tp.export.export(MLP(), (tp.randn(3, 8),))
    assert str(ep.graph) == ep.graph.python_code() == "\n".join([
        "def forward(self, p_fc1_weight, p_fc1_bias, p_fc2_weight, p_fc2_bias, x):",
        "    linear = tp.ops.linear.default(x, p_fc1_weight, p_fc1_bias)  # float32[3, 16]",
        "    relu = tp.ops.relu.default(linear)  # float32[3, 16]",
        "    linear_1 = tp.ops.linear.default(relu, p_fc2_weight, p_fc2_bias)  # float32[3, 4]",
        "    return (linear_1,)",
    ])
    assert [n.target for n in ep.graph.nodes] == ["linear", "relu", "linear"]
    svg = str(ep.graph.to_svg())
    assert svg.startswith("<svg") and svg.count("tp.ops.linear.default") == 2


def test_signature_and_state_dict():
    model = DigitsCNN().eval()
    ep = tp.export.export(model, (tp.randn(2, 1, 8, 8),))
    sig = ep.graph_signature
    assert sig.parameters == [n for n, _ in model.named_parameters()]
    assert sig.buffers == [n for n, _ in model.named_buffers()]
    assert sig.user_inputs == ["input"] and len(sig.user_outputs) == 1
    assert sig.inputs_to_parameters["p_0_weight"] == "0.weight"
    assert sig.inputs_to_buffers["b_1_running_mean"] == "1.running_mean"
    assert [s.kind.name for s in sig.input_specs][-1] == "USER_INPUT"
    assert set(ep.state_dict) == set(model.state_dict())
    assert set(ep.module().state_dict()) == set(model.state_dict())
    assert ep.run_decompositions() is ep


@pytest.mark.parametrize("name", list(MODELS))
def test_module_replays_the_graph_with_eagers_values(name):
    tp.manual_seed(0)
    make, inputs = MODELS[name]
    model = make().eval()
    x = inputs(2)
    ep = tp.export.export(model, (x,))
    got = ep.module()(x)
    # (a capture records attention's math path, which eager takes with flash turned off:
    # eager on the CPU runs the flash kernel where PyTorch's would)
    flash = tp.backends.cuda.flash_sdp_enabled()
    tp.backends.cuda.enable_flash_sdp(False)
    try:
        assert tp.equal(got, eager(model, x))
    finally:
        tp.backends.cuda.enable_flash_sdp(flash)
    # the replay holds its own copy of the parameters: changing the module changes nothing
    with tp.no_grad():
        next(model.parameters()).add_(1.0)
    assert tp.equal(ep.module()(x), got)


def test_replay_records_autograd_as_eager_does():
    tp.manual_seed(0)
    model = MLP()
    x = tp.randn(3, 8)
    replay = tp.export.export(model, (x,)).module()
    model(x).square().sum().backward()
    replay(x).square().sum().backward()
    assert tp.allclose(replay.fc1.weight.grad, model.fc1.weight.grad)


def test_the_mode_sees_composites_as_their_parts():
    """scaled_dot_product_attention decomposes above autograd: the graph holds its parts
    (bmm, softmax); linear has a kernel of its own and stays whole."""
    ep = tp.export.export(small_transformer().eval(), (tp.randint(0, 20, (2, 8)),))
    targets = {n.target for n in ep.graph.nodes}
    assert {"linear", "bmm", "_softmax", "native_layer_norm", "embedding"} <= targets
    assert "scaled_dot_product_attention" not in targets
    assert any(v.kind == "constant" for n in ep.graph.nodes for v in n.args
               if isinstance(v, tp.export.Value))       # tp.arange's positions, frozen


@pytest.mark.parametrize("name", list(MODELS))
def test_dynamic_batch_replays_at_another_size(name):
    tp.manual_seed(0)
    make, inputs = MODELS[name]
    model = make().eval()
    ep = tp.export.export(model, (inputs(2),), dynamic_shapes=({0: Dim("batch")},))
    assert ep.dynamic_dims == [(0, 0, "batch")] and "batch" in ep.range_constraints
    x = inputs(5)
    assert tp.allclose(ep.module()(x), eager(model, x), atol=1e-6)


def test_dynamic_sizes_are_symbolic_in_the_graph():
    tp.manual_seed(0)
    ep = tp.export.export(DigitsMLP().eval(), (tp.randn(4, 8, 8),),
                          dynamic_shapes={"input": {0: Dim("batch")}})
    code = ep.graph.python_code()
    assert "view = tp.ops.view.default(input, (batch, 64))  # float32[batch, 64]" in code
    static = tp.export.export(DigitsMLP().eval(), (tp.randn(4, 8, 8),))
    assert "(4, 64)" in static.graph.python_code()
    with pytest.raises(tp.errors.ShapeError):      # the static graph baked the batch in
        static.module()(tp.randn(5, 8, 8))


def test_transformer_heads_times_batch_is_affine():
    """Attention's scores are one bmm over (batch * heads, seq, seq): 2*batch."""
    ep = tp.export.export(small_transformer().eval(), (tp.randint(0, 20, (2, 8)),),
                          dynamic_shapes=({0: Dim("batch")},))
    assert "(2*batch, 8, 8)" in ep.graph.python_code()


def test_a_constant_that_follows_a_dynamic_dim_is_refused():
    class Positions(nn.Module):
        def forward(self, x):
            return x + tp.arange(x.shape[0], dtype=tp.float32)   # not dispatched: a constant

    with pytest.raises(ExportError, match=r"constant .*follows a dynamic dim"):
        tp.export.export(Positions(), (tp.randn(3),), dynamic_shapes=({0: Dim("n")},))


def test_bad_dynamic_shapes_are_typed_errors():
    with pytest.raises(ExportError, match="'y'"):
        tp.export.export(MLP(), (tp.randn(3, 8),), dynamic_shapes={"y": {0: Dim("b")}})
    with pytest.raises(ExportError, match="tp.export.Dim"):
        tp.export.export(MLP(), (tp.randn(3, 8),), dynamic_shapes=({0: "batch"},))
    with pytest.raises(ExportError, match="'args' must be a tuple"):
        tp.export.export(MLP(), tp.randn(3, 8))


def test_data_dependent_control_flow_follows_the_path_taken():
    class Branch(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1

    ep = tp.export.export(Branch(), (tp.ones(3),))
    assert [n.target for n in ep.graph.nodes][-1] == "mul.Tensor"
    # replay runs the recorded branch whatever the input: the documented limit
    assert tp.equal(ep.module()(-tp.ones(3)), -2 * tp.ones(3))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, y=None, scale=2.0):
        h = self.lin(x) * scale
        return h, h + y


def test_keyword_inputs_and_a_dim_two_inputs_share():
    tp.manual_seed(0)
    model = TwoInputs()
    batch = Dim("batch")
    ep = tp.export.export(model, (tp.randn(2, 3),), {"y": tp.randn(2, 3), "scale": 3.0},
                          dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
    assert ep.graph_signature.user_inputs == ["x", "y"]
    assert len(ep.graph_signature.user_outputs) == 2
    x, y = tp.randn(4, 3), tp.randn(4, 3)
    for got, want in zip(ep.module()(x, y=y), eager(lambda a: model(a, y, 3.0), x)):
        assert tp.allclose(got, want)
    with pytest.raises(ExportError, match="share one Dim"):    # two names: grown apart
        tp.export.export(model, (tp.randn(2, 3),), {"y": tp.randn(2, 3)},
                         dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}})


def test_capture_leaves_the_modules_buffers_as_they_were():
    """Capture runs the module (four times with a dynamic dim); batch norm in training
    mode updates its running statistics in place, and export puts them back."""
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ep = tp.export.export(model, (tp.randn(2, 1, 8, 8),), dynamic_shapes=({0: Dim("n")},))
    assert "add_.Tensor" in [n.target for n in ep.graph.nodes]    # num_batches_tracked += 1
    for k, v in model.state_dict().items():
        assert tp.equal(v, before[k]), k
    assert tp.equal(ep.state_dict["1.num_batches_tracked"], before["1.num_batches_tracked"])


def test_a_constant_written_through_a_view_starts_afresh_on_every_replay():
    """`c[0].add_(x)` writes the constant c by another name: each replay starts from the
    captured c (a copy), as eager and torch make it anew on each call. The replay copied
    only the constants written by their own name, so the writes piled up."""
    def forward(T, x):
        c = T.arange(3, dtype=T.float32)
        c[0].add_(x[0])
        return c * 1

    class M(nn.Module):
        def forward(self, x):
            return forward(tp, x)
    expected = forward(torch, torch.ones(3)).tolist()
    module = tp.export.export(M(), (tp.ones(3),)).module()
    assert [module(tp.ones(3)).tolist() for _ in range(3)] == [expected] * 3
