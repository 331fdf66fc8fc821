"""`tp.export`: capture a module's forward as a graph of ops (torch.export's names).

    ep = tp.export.export(model, (x,), dynamic_shapes={"x": {0: tp.export.Dim("batch")}})
    print(ep.graph)                 # one line per op, shapes and dtypes as comments
    ep.module()(x2)                 # the graph replayed: the same values as model(x2)

The path: a dispatch mode records every op (capture.py) into a Graph (graph.py);
dynamic dims are found by running again at other sizes (dynamic.py); the program
(program.py) replays it, and tp.onnx translates it op by op (tensorplay/onnx/).
"""
from tensorplay.export.dynamic import Dim, ExportError
from tensorplay.export.graph import Graph, Node, SymInt, Value
from tensorplay.export.program import (ExportedProgram, ExportGraphSignature, InputKind,
                                       InputSpec, OutputKind, OutputSpec, export)

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "Dim", "ExportError",
           "InputKind", "InputSpec", "OutputKind", "OutputSpec", "Graph", "Node", "Value",
           "SymInt"]
