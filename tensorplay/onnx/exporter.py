"""The ONNX model of a captured graph: each node through its translation
(translation.py), parameters and constants as initializers, user inputs and outputs as
the graph's inputs and outputs, dynamic dims named."""
from __future__ import annotations

import onnx
from onnx import helper

from tensorplay.export.program import InputKind
from tensorplay.onnx.translation import TRANSLATIONS, Context, translate, value_info

DEFAULT_OPSET = 18


def to_model_proto(ep, *, input_names=None, output_names=None, opset_version=None,
                   export_params=True, custom_translation_table=None):
    graph = ep.graph
    sig = ep.graph_signature
    user = [p for p, s in zip(graph.placeholders, sig.input_specs)
            if s.kind is InputKind.USER_INPUT]
    lifted = [(p, s) for p, s in zip(graph.placeholders, sig.input_specs)
              if s.kind is not InputKind.USER_INPUT]
    rename = {}
    for p, name in zip(user, input_names or ()):
        rename[p.name] = name
    for v, name in zip(graph.outputs, output_names or ()):
        rename[v.name] = name
    ctx = Context(graph, rename)
    for p in user:
        ctx.known.add(ctx.name(p))

    inputs = [value_info(ctx.name(p), p) for p in user]
    for p, spec in lifted:      # parameters and buffers: initializers under their names,
        rename[p.name] = spec.target     # added when a node reads them
        if export_params:
            ctx.lazy[spec.target] = ep.state_dict[spec.target].detach().numpy()
        else:
            inputs.append(value_info(spec.target, p))
            ctx.known.add(spec.target)

    table = dict(TRANSLATIONS)
    for op, fn in (custom_translation_table or {}).items():
        table[getattr(op, "name", op)] = fn
    for node in graph.nodes:
        translate(ctx, node, table)

    outputs = []
    for v in graph.outputs:
        name = ctx.tensor(v)
        if name in (ctx.name(p) for p in user) or name in ctx.initializers_names():
            copy = ctx.op("Identity", [name], [name + "_out"])   # an output of its own
            name = copy
        outputs.append(value_info(name, v))
    onnx_graph = helper.make_graph(ctx.nodes, "main_graph", inputs, outputs,
                                   initializer=ctx.initializers)
    opset = opset_version or DEFAULT_OPSET
    model = helper.make_model(onnx_graph, producer_name="tensorplay",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)      # what onnxruntime reads
    onnx.checker.check_model(model)
    return model
