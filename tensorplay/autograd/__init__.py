"""tensorplay.autograd: reverse-mode automatic differentiation.

Where to start reading:

    grad_mode.py      whether ops record a graph (no_grad, inference_mode)
    node.py           a backward node, and AccumulateGrad for leaves
    saved.py          tensors kept for backward, checked against in-place changes
    recording.py      how a generated wrapper records its op (node, saves, history)
    inplace_views.py  in-place ops on views (CopySlices)
    engine.py         backward() and grad(): running the graph
    forward_ad.py     forward mode: dual tensors (forward_mode.py: tangents, levels,
                      the kernel at the ForwardAD key)
    api.py            requires_grad_, register_hook, retain_grad, .data
    function.py       custom Functions written in Python
    gradcheck.py      finite-difference checks; functional.py: jacobian, hessian...
    graph.py          the backward graph as Graphviz DOT text
    variable.py       Variable, the pre-0.4 wrapper, kept for old tutorials
"""
from tensorplay.autograd.grad_mode import (  # noqa: F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled,
)
from tensorplay.autograd.anomaly_mode import (  # noqa: F401
    detect_anomaly, set_detect_anomaly, is_anomaly_enabled,
)
from tensorplay.autograd.engine import backward, grad  # noqa: F401
from tensorplay.autograd.function import Function, once_differentiable  # noqa: F401
from tensorplay.autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa
from tensorplay.autograd.node import Node  # noqa: F401
from tensorplay.autograd.variable import Variable  # noqa: F401
from tensorplay.autograd import functional, graph, forward_ad  # noqa: F401

__all__ = ["backward", "grad", "Function", "once_differentiable", "gradcheck",
           "gradgradcheck", "GradcheckError", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "functional", "graph", "Node", "Variable", "forward_ad"]
