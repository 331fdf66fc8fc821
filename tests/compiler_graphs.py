"""Small models and functions captured by tp.export for the compiler's tests
(tests/test_compiler_passes.py, tests/test_compiler_codegen.py): each case builds its
module and example inputs on a device."""
import tensorplay as tp
from tensorplay import nn
from tensorplay.train.models import CharTransformer, DigitsCNN, DigitsMLP


class Fn(nn.Module):
    """A function as a module, so that tp.export can capture it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class LSTMLoop(nn.Module):
    def __init__(self, hidden=8, steps=2):
        super().__init__()
        self.cell = nn.LSTMCell(hidden, hidden)
        self.steps = steps

    def forward(self, x, h, c):
        for _ in range(self.steps):
            h, c = self.cell(x, (h, c))
        return h, c


def _r(*shape, dtype=tp.float32, device="cpu"):
    return tp.randn(*shape, dtype=dtype, device=device)


def _i(*shape, dtype=tp.int64, device="cpu"):
    return tp.randint(-5, 6, shape, dtype=dtype, device=device)


def _inplace(x, y):
    a = x.clone()
    a.add_(y)
    a.mul_(2.0)
    b = a.relu_()
    return b, a * y


def _chunks(x):
    a, b = tp.chunk(x, 2, dim=1)
    return a.sigmoid() * b.tanh()


def _max_dim(x):
    values, indices = tp.max(x, dim=1)
    return values * 2, indices


def _var_mean(x):
    v, m = tp.var_mean(x, dim=0)
    return (v + 1).sqrt() + m


def _broadcast(x, y, z):
    return ((x + y).exp() * 2.0 - z).tanh()


def _integers(i, j):
    k = i * 3 + j
    return k // 2, k > 0, tp.where(k > 0, i, j), k.abs()


def _bools(a, b):
    return tp.logical_and(a, b), a & ~b, (a.to(tp.int64) + b.to(tp.int64))


def _zero_dim(a, b):
    return (a * b + 1.5).exp() - a, (a > b)


def _empty(x, y):
    return (x + y).sigmoid() * 3.0, x.sum(dim=0)


def _transposed_input(x, y):
    return (x * y + 1.0).relu(), x.exp()


def _promotion(x, d, h):
    return (x + d) * 2, (h * h + h).exp(), x * h


def _constants(x):
    k = tp.arange(4, dtype=x.dtype, device=x.device) * 2 + 1
    return x * k + tp.ones(4, device=x.device).sum()


def _composites(x, y):
    return tp.nn.functional.mse_loss(x, y), tp.logaddexp(x, y), x ** 2


def _aliases(x):
    return x, x.view(-1), x.t(), (x + 1).view(-1)


def _softmax_norm(x):
    return tp.nn.functional.layer_norm(tp.softmax(x, dim=-1), (6,)), tp.log_softmax(x, -1)


def _reduction_tail(x, y):
    return ((x - y) * (x - y)).sum(), (x * y).mean(dim=1), (x.exp()).sum(dim=0, keepdim=True)


def _shared_subexpressions(x, w):
    a = x @ w
    b = x @ w
    return (a.tanh() + b.tanh()) * a.sigmoid()


def _dropout(x):
    return tp.nn.functional.dropout(x * 2, 0.5, training=True) + 1


def _split(x):
    parts = tp.split(x, [1, 2, 3], dim=1)
    return [p.exp() for p in parts]


def _written_constant(x):
    c = tp.zeros(3, device=x.device)
    c.add_(x)                   # a constant of the graph, written in place
    return c * 2


def cases(device="cpu"):
    """name -> (module, inputs)."""
    d = dict(device=device)
    out = {
        "mlp": (DigitsMLP(hidden=16).eval(), (_r(3, 8, 8, **d),)),
        "mlp_train": (DigitsMLP(hidden=16).train(), (_r(3, 8, 8, **d),)),
        "cnn": (DigitsCNN(width=4).eval(), (_r(2, 1, 8, 8, **d),)),
        "cnn_train": (DigitsCNN(width=4).train(), (_r(2, 1, 8, 8, **d),)),
        "transformer": (CharTransformer(20, context=8, d_model=16, nhead=2, num_layers=1).eval(),
                        (tp.randint(0, 20, (2, 8), device=device),)),
        "lstm_cell": (LSTMLoop(), (_r(4, 8, **d), _r(4, 8, **d), _r(4, 8, **d))),
        "inplace": (Fn(_inplace), (_r(3, 4, **d), _r(3, 4, **d))),
        "batch_norm_train": (nn.BatchNorm1d(4).train(), (_r(5, 4, **d),)),
        "chunks": (Fn(_chunks), (_r(3, 8, **d),)),
        "max_dim": (Fn(_max_dim), (_r(3, 5, **d),)),
        "var_mean": (Fn(_var_mean), (_r(6, 3, **d),)),
        "broadcast": (Fn(_broadcast), (_r(4, 1, 3, **d), _r(5, 3, **d), _r(3, **d))),
        "integers": (Fn(_integers), (_i(3, 4, **d), _i(3, 4, **d))),
        "bools": (Fn(_bools), (_r(5, **d) > 0, _r(5, **d) > 0)),
        "zero_dim": (Fn(_zero_dim), (_r(**d), _r(**d))),
        "empty": (Fn(_empty), (_r(0, 3, **d), _r(0, 3, **d))),
        "transposed_input": (Fn(_transposed_input), (_r(5, 3, **d).t(), _r(3, 5, **d))),
        "promotion": (Fn(_promotion), (_r(3, **d), _r(3, dtype=tp.float64, **d),
                                       _r(3, dtype=tp.float16, **d))),
        "constants": (Fn(_constants), (_r(2, 4, **d),)),
        "composites": (Fn(_composites), (_r(3, 4, **d), _r(3, 4, **d))),
        "aliases": (Fn(_aliases), (_r(2, 3, **d),)),
        "softmax_norm": (Fn(_softmax_norm), (_r(2, 6, **d),)),
        "reduction_tail": (Fn(_reduction_tail), (_r(4, 5, **d), _r(4, 5, **d))),
        "shared_subexpressions": (Fn(_shared_subexpressions), (_r(3, 4, **d), _r(4, 4, **d))),
        "dropout": (Fn(_dropout), (_r(4, 6, **d),)),
        "split": (Fn(_split), (_r(2, 6, **d),)),
        "written_constant": (Fn(_written_constant), (_r(3, **d),)),
        "float64": (Fn(_broadcast), (_r(2, 3, dtype=tp.float64, **d), _r(3, dtype=tp.float64, **d),
                                     _r(2, 3, dtype=tp.float64, **d))),
    }
    return {k: (m.to(device), ins) for k, (m, ins) in out.items()}


def captured(module, inputs):
    """(graph, the placeholders' tensors) of module(*inputs)."""
    ep = tp.export.export(module, tuple(inputs))
    lifted = [t for _, t in module.named_parameters()] + [t for _, t in module.named_buffers()]
    return ep.graph, lifted + list(inputs)


def captured_training_step(module, inputs, labels):
    """(graph, tensors) of one forward and backward: the loss and the parameters'
    gradients, the backward's ops recorded as the engine runs them (the capture mode is
    on during tp.autograd.grad, below autograd). A joint graph by hand, as the
    frontend's compiled backward makes one."""
    from tensorplay.export.capture import CaptureMode, _frozen
    from tensorplay.export.graph import Graph
    params = [p for _, p in module.named_parameters()]
    graph = Graph()
    mode = CaptureMode(graph)
    for i, t in enumerate(params + list(inputs) + [labels]):
        mode.add_placeholder(f"in{i}", t)
    with mode:
        loss = tp.nn.functional.cross_entropy(module(*inputs), labels)
        grads = tp.autograd.grad(loss, params)
    graph.outputs = [mode.output_of(t) for t in (loss, *grads)]
    graph.constants = {k: _frozen(v) for k, v in graph.constants.items()}
    return graph, params + list(inputs) + [labels]
