"""tp.onnx.export: the captured graph translated op by op to ONNX, run by onnxruntime on
the same inputs: the same values as TensorPlay's (atol 1e-5), at another batch size too
when the batch is a dynamic axis."""
import io

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn
from tensorplay.train.models import CharTransformer, DigitsCNN, DigitsMLP

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

MODELS = {
    "mlp": (DigitsMLP, lambda n: tp.randn(n, 8, 8)),
    "cnn": (DigitsCNN, lambda n: tp.randn(n, 1, 8, 8)),
    "transformer": (lambda: CharTransformer(20, context=8, d_model=16, nhead=2,
                                            num_layers=1),
                    lambda n: tp.randint(0, 20, (n, 8))),
}


def run_onnx(source, **inputs):
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(None, {k: v.numpy() for k, v in inputs.items()})


def eager(model, x):
    with tp.no_grad():
        return model(x).numpy()


@pytest.mark.parametrize("name", list(MODELS))
def test_onnxruntime_agrees_with_tensorplay_at_two_batch_sizes(name, tmp_path):
    tp.manual_seed(0)
    make, inputs = MODELS[name]
    model = make()             # in training mode: export captures it in eval (TrainingMode.EVAL)
    path = tmp_path / f"{name}.onnx"
    tp.onnx.export(model, (inputs(3),), str(path), input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert model.training
    model.eval()
    proto = onnx.load(str(path))
    assert [i.name for i in proto.graph.input] == ["x"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.opset_import[0].version == 18
    for batch in (3, 5):
        x = inputs(batch)
        y, = run_onnx(str(path), x=x)
        np.testing.assert_allclose(y, eager(model, x), atol=1e-5, rtol=0)


def test_file_like_target_and_the_returned_program():
    tp.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.GELU(), nn.Linear(3, 2), nn.LogSoftmax(-1))
    buf = io.BytesIO()
    program = tp.onnx.export(model, (tp.randn(2, 4),), buf, opset_version=17)
    assert program.model_proto.opset_import[0].version == 17
    assert program.exported_program.graph_signature.user_inputs == ["input"]
    x = tp.randn(2, 4)
    y, = run_onnx(buf.getvalue(), input=x)
    np.testing.assert_allclose(y, eager(model, x), atol=1e-5, rtol=0)
    # no dynamic axes: the batch is fixed
    assert program.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2


def test_parameters_as_inputs_when_not_exported():
    model = nn.Linear(3, 2)
    program = tp.onnx.export(model, (tp.randn(1, 3),), export_params=False)
    assert [i.name for i in program.model_proto.graph.input] == ["input", "weight", "bias"]
    assert not program.model_proto.graph.initializer


def test_an_op_without_a_translation_is_named():
    class Cumulative(nn.Module):
        def forward(self, x):
            return x.cumsum(0)

    with pytest.raises(tp.onnx.errors.UnsupportedOperatorError, match=r"cumsum") as err:
        tp.onnx.export(Cumulative(), (tp.randn(3),))
    assert err.value.op == "cumsum"


def test_custom_translation_table_adds_an_op():
    class Cumulative(nn.Module):
        def forward(self, x):
            return x.cumsum(0)

    def cumsum(ctx, node, x, dim, dtype=None):
        ctx.op("CumSum", [ctx.tensor(x), ctx.constant(np.array(dim, dtype=np.int64))],
               [ctx.out(node)])

    program = tp.onnx.export(Cumulative(), (tp.randn(3),),
                             custom_translation_table={tp.ops.cumsum.default: cumsum})
    x = tp.randn(3)
    y, = run_onnx(program.model_proto.SerializeToString(), x=x)
    np.testing.assert_allclose(y, x.cumsum(0).numpy(), atol=1e-6)


def test_batch_norm_in_training_mode_is_refused():
    """Batch statistics (training=True) are not ONNX's BatchNormalization; a model that
    updates its running statistics is refused earlier, at the in-place add_ of
    num_batches_tracked."""
    model = nn.BatchNorm2d(2, track_running_stats=False)
    with pytest.raises(tp.onnx.errors.UnsupportedOperatorError,
                       match=r"native_batch_norm.*training=True"):
        tp.onnx.export(model, (tp.randn(2, 2, 3, 3),))
    with pytest.raises(tp.onnx.errors.UnsupportedOperatorError, match=r"add_\.Tensor"):
        tp.onnx.export(DigitsCNN(), (tp.randn(2, 1, 8, 8),),
                       training=tp.onnx.TrainingMode.TRAINING)


def test_is_in_onnx_export_during_the_capture():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(tp.onnx.is_in_onnx_export())
            return x + 1

    tp.onnx.export(Probe(), (tp.randn(2),))
    assert seen == [True] and tp.onnx.is_in_onnx_export() is False


def test_transformer_encoder_layer_sequence_first_with_gelu():
    """nn.TransformerEncoderLayer as PyTorch builds it by default ((seq, batch, d), post-
    norm) with gelu: the batch is dim 1, and MultiheadAttention's views hold batch*heads."""
    tp.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, activation="gelu")
    program = tp.onnx.export(layer, (tp.randn(5, 3, 16),), input_names=["src"],
                             dynamic_axes={"src": {1: "batch"}})
    layer.eval()
    x = tp.randn(5, 4, 16)
    y, = run_onnx(program.model_proto.SerializeToString(), src=x)
    np.testing.assert_allclose(y, eager(layer, x), atol=1e-5, rtol=0)


def test_an_exported_program_exports_as_it_is():
    tp.manual_seed(0)
    model = DigitsMLP().eval()
    ep = tp.export.export(model, (tp.randn(2, 8, 8),))
    program = tp.onnx.export(ep, (tp.randn(2, 8, 8),), verify=True)
    assert program.exported_program is ep
    x = tp.randn(2, 8, 8)
    y, = run_onnx(program.model_proto.SerializeToString(), input=x)
    np.testing.assert_allclose(y, eager(model, x), atol=1e-5, rtol=0)


def test_verify_catches_a_wrong_translation():
    def wrong_relu(ctx, node, x):
        ctx.op("Identity", [ctx.tensor(x)], [ctx.out(node)])

    tp.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    x = tp.randn(4, 3)
    assert (model(x) == 0).any()          # some value the wrong translation changes
    with pytest.raises(tp.onnx.OnnxExporterError, match="verify=True.*differs"):
        tp.onnx.export(model, (x,), verify=True,
                       custom_translation_table={"relu": wrong_relu})
