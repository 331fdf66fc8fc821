"""`tp.onnx`: export a model to ONNX (torch.onnx's names and signature).

    tp.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch"}})

The model is captured by `tp.export.export` (a dispatch mode records every op, see
tensorplay/export/), then each captured op goes through its ONNX translation, one small
function per op (`TRANSLATIONS` in tensorplay/onnx/translation.py); an op without one
raises `UnsupportedOperatorError` naming it. The `onnx` package builds the file
(`pip install onnx`, in the `dev` extra); importing tp.onnx does not need it.
"""
from __future__ import annotations

import enum

from tensorplay.onnx import errors  # noqa: F401
from tensorplay.onnx.errors import OnnxExporterError, UnsupportedOperatorError

__all__ = ["errors", "export", "is_in_onnx_export", "OnnxExporterError", "ONNXProgram",
           "OperatorExportTypes", "TrainingMode", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic", "select_model_mode_for_export",
           "UnsupportedOperatorError"]

producer_name = "tensorplay"
producer_version = "0.1.0"

_exporting = [False]


class TrainingMode(enum.IntEnum):
    """Which mode the exported model is captured in (torch.onnx.TrainingMode)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class ONNXProgram:
    """What `export` returns: `model_proto` (the onnx.ModelProto), `exported_program`
    (the captured graph), `save(path)`."""

    def __init__(self, model_proto, exported_program):
        self.model_proto = model_proto
        self.exported_program = exported_program

    def save(self, destination):
        import onnx
        onnx.save_model(self.model_proto, destination)

    def __repr__(self):
        g = self.model_proto.graph
        return (f"ONNXProgram({len(g.node)} ONNX nodes, inputs "
                f"{[i.name for i in g.input]}, outputs {[o.name for o in g.output]})")


def _dynamic_shapes_from_axes(dynamic_axes, names):
    """torch.onnx's dynamic_axes ({"x": {0: "batch"}} or {"x": [0]}, by ONNX input
    name) as tp.export's dynamic_shapes, a tuple by tensor input (`names`: their ONNX
    names). The outputs' dynamic dims follow from the inputs'."""
    from tensorplay.export import Dim
    dims = {}
    shapes = []
    for name in names:
        axes = dynamic_axes.get(name)
        if axes is not None and not isinstance(axes, dict):
            axes = {a: f"{name}_dynamic_axes_{a}" for a in axes}
        shapes.append(None if axes is None else
                      {a: dims.setdefault(n, Dim(n)) for a, n in axes.items()})
    return tuple(shapes) if any(s is not None for s in shapes) else None


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, custom_translation_table=None, report=False, optimize=True,
           verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=TrainingMode.EVAL, operator_export_type=OperatorExportTypes.ONNX,
           do_constant_folding=True, custom_opsets=None, export_modules_as_functions=False,
           autograd_inlining=True):
    """Export `model(*args, **kwargs)` to ONNX, written to `f` (a path or a binary file)
    when given; returns an ONNXProgram. `training` picks the mode the model is captured
    in (EVAL by default, as PyTorch); `dynamic_axes` (by input name) or `dynamic_shapes`
    (tp.export's) name the dynamic dims. `custom_translation_table`: {op: fn(ctx, node,
    *args)} (see tensorplay/onnx/translation.py). `verify=True` runs onnxruntime on the
    example inputs and compares. Other options are accepted and have no effect here (no
    optimizer, no external data, no TorchScript)."""
    import inspect

    from tensorplay import Tensor
    from tensorplay.export import ExportedProgram
    from tensorplay.export import export as capture
    try:
        from tensorplay.onnx.exporter import to_model_proto
    except ImportError as e:
        raise ImportError(f"tp.onnx.export needs the onnx package (pip install onnx, or "
                          f"the dev extra: pip install -e '.[dev]'): {e}") from e

    if not isinstance(args, tuple):
        args = (args,)
    _exporting[0] = True
    try:
        if isinstance(model, ExportedProgram):
            ep = model
        else:
            if dynamic_shapes is None and dynamic_axes:
                own = list(inspect.signature(model.forward).parameters)
                values = list(args) + list((kwargs or {}).values())
                given = own[:len(args)] + list(kwargs or {})
                tensors = [n for n, v in zip(given, values) if isinstance(v, Tensor)]
                names = list(input_names or ())[:len(tensors)]
                dynamic_shapes = _dynamic_shapes_from_axes(
                    dynamic_axes, names + tensors[len(names):])
            with select_model_mode_for_export(model, training):
                ep = capture(model, args, kwargs, dynamic_shapes=dynamic_shapes)
        proto = to_model_proto(ep, input_names=input_names, output_names=output_names,
                               opset_version=opset_version, export_params=export_params,
                               custom_translation_table=custom_translation_table)
    finally:
        _exporting[0] = False
    program = ONNXProgram(proto, ep)
    if verify:
        _verify(program, args, kwargs)
    if verbose:
        print(ep.graph.python_code())
    if f is not None:
        program.save(f)
    return program


def _verify(program, args, kwargs):
    """`verify=True`: onnxruntime on the example inputs against the graph's replay."""
    import numpy as np
    import onnxruntime

    from tensorplay import Tensor
    session = onnxruntime.InferenceSession(program.model_proto.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    tensors = [v for v in list(args) + list((kwargs or {}).values()) if isinstance(v, Tensor)]
    feed = {i.name: t.numpy() for i, t in zip(session.get_inputs(), tensors)}
    got = session.run(None, feed)
    want = program.exported_program.module()(*args, **(kwargs or {}))
    want = want if isinstance(want, tuple) else (want,)
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.detach().numpy()
        if g.shape != w.shape or not np.allclose(g, w, atol=1e-5, rtol=1e-4):
            raise OnnxExporterError(f"onnx.export(verify=True): output {k} of onnxruntime "
                                    f"differs from TensorPlay's (max abs difference "
                                    f"{np.abs(g - w).max() if g.shape == w.shape else 'shape'})",
                                    op="onnx.export")


def dynamo_export(model, *args, **kwargs):
    """The older name (torch.onnx.dynamo_export): export(model, args, kwargs=kwargs)."""
    return export(model, args, kwargs=kwargs)


def is_in_onnx_export():
    """True while `export` runs (model code may branch on this)."""
    return _exporting[0]


def is_onnxrt_backend_supported():
    return False


_WHY = ("a symbolic function of PyTorch's TorchScript exporter works on a TorchScript graph, "
        "which TensorPlay has none of; pass export(..., custom_translation_table={op: fn}) "
        "with fn(ctx, node, *args) as in tensorplay/onnx/translation.py")


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Refused, with the way that works here: a script must not believe its custom op is
    exportable through a TorchScript symbolic."""
    raise OnnxExporterError(f"onnx.register_custom_op_symbolic(): {_WHY}",
                            op="onnx.register_custom_op_symbolic")


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    raise OnnxExporterError(f"onnx.unregister_custom_op_symbolic(): {_WHY}",
                            op="onnx.unregister_custom_op_symbolic")


class select_model_mode_for_export:
    """`with select_model_mode_for_export(model, TrainingMode.EVAL):` the model in that
    mode for the region, its mode restored after (PyTorch's context manager: it needs no
    exporter, and scripts use it around their own tracing)."""

    def __init__(self, model, mode):
        self.model, self.mode = model, TrainingMode(mode)

    def __enter__(self):
        self._was_training = self.model.training
        if self.mode is not TrainingMode.PRESERVE:
            self.model.train(self.mode is TrainingMode.TRAINING)
        return self.model

    def __exit__(self, *exc):
        self.model.train(self._was_training)
        return False


