"""tp.compile against eager, on the CPU, and the kernels launched on cuda.

    python benchmarks/bench_compile.py            the CPU timings
    python benchmarks/bench_compile.py --cuda     also the launch counts on cuda (the
                                                  Triton interpreter without a GPU)

Targets (issue "Graph capture and tp.compile"): an LSTM-cell loop (batch 4, hidden 32,
20 steps) >= 1.5x faster compiled than eager on the CPU; no benchmarked model slower
compiled (the MLP and digits-CNN training steps).

Two parts:
1. the lowering alone (tensorplay/compiler/lowering.py): each model's forward captured
   by tp.export, lowered, and `cg(*inputs)` timed against the eager module under
   no_grad (the same computation: a forward graph records no autograd history); then
   a training step's forward and backward captured as one graph, against eager's
   forward and tp.autograd.grad;
2. tp.compile: the compiled module against the eager one, the LSTM loop's forward and
   the training steps (forward, backward, Adam step; the compiled backward is the
   frontend's joint graph).

Measured (part 1, one thread, a busy 2-core machine): LSTM-cell loop 3.4-3.6x (300 ops
captured, 223 after CSE; the 5 pointwise ops of each step one fused NumPy function),
MLP forward 1.6x, digits-CNN forward 1.07x (its convolutions dominate); forward +
backward as one graph: MLP 2.1x, CNN 1.2x. On cuda (the interpreter, an LSTM loop of 3
steps) 33 launches eager, 15 compiled.

Timings: `paired_min` (common.py): the two sides alternate in batches and each keeps its
fastest batch, so both see the same load on a shared machine. One thread
(BENCH_THREADS), as the other benchmarks: NumPy's OpenBLAS through
OPENBLAS_NUM_THREADS, set before NumPy loads.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
if "--cuda" in sys.argv and not os.path.exists("/dev/nvidiactl"):
    # no GPU: the launches are counted in Triton's interpreter (read when the kernels are
    # defined, so set before tensorplay loads them)
    os.environ.setdefault("TRITON_INTERPRET", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, paired_min  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay import nn  # noqa: E402
from tensorplay.train.models import DigitsCNN, DigitsMLP  # noqa: E402

BATCH, HIDDEN, STEPS = 4, 32, 20


class LSTMCellLoop(nn.Module):
    """The small-op model: one LSTMCell applied STEPS times (a dozen ops per step)."""

    def __init__(self, hidden=HIDDEN, steps=STEPS):
        super().__init__()
        self.cell = nn.LSTMCell(hidden, hidden)
        self.steps = steps

    def forward(self, x, h, c):
        for _ in range(self.steps):
            h, c = self.cell(x, (h, c))
        return h, c


def models(device="cpu"):
    """name -> (module, example inputs, labels for a training step or None)."""
    tp.manual_seed(0)
    d = dict(device=device)
    return {
        "LSTM-cell loop": (LSTMCellLoop().to(device),
                           tuple(tp.randn(BATCH, HIDDEN, **d) for _ in range(3)), None),
        "MLP (digits)": (DigitsMLP().to(device), (tp.randn(32, 8, 8, **d),),
                         tp.randint(0, 10, (32,), **d)),
        "CNN (digits)": (DigitsCNN().to(device), (tp.randn(32, 1, 8, 8, **d),),
                         tp.randint(0, 10, (32,), **d)),
    }


def line(label, eager, compiled):
    print(f"  {label:<34}eager {fmt_time(eager)}   compiled {fmt_time(compiled)}   "
          f"speedup {eager / compiled:5.2f}x")


def bench_lowering():
    """Part 1: the forward graph captured, lowered and called, against eager no_grad."""
    from tensorplay.compiler.lowering import lower
    print("\nthe lowering: forward graph (tp.export -> lower) vs eager forward, no_grad")
    for name, (module, inputs, _) in models().items():
        module.eval()
        graph = tp.export.export(module, inputs).graph
        lifted = [t for _, t in module.named_parameters()] + \
            [t for _, t in module.named_buffers()]
        cg = lower(graph, device="cpu")
        tensors = lifted + list(inputs)

        def eager():
            with tp.no_grad():
                module(*inputs)
        t_eager, t_compiled = paired_min(eager, lambda: cg(*tensors), batch=20, rounds=15)
        line(f"{name} ({len(graph.nodes)} -> {len(cg.graph.nodes)} ops)", t_eager,
             t_compiled)


def bench_joint_graphs():
    """Part 1, continued: a training step's forward and backward as one graph (captured
    by hand as the frontend's joint graph is: tests/compiler_graphs.py), lowered,
    against eager's forward and backward (tp.autograd.grad)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tests"))
    from compiler_graphs import captured_training_step
    from tensorplay.compiler.lowering import lower
    print("\nthe lowering: forward + backward graph vs eager forward + backward")
    for name, (module, inputs, labels) in models().items():
        if labels is None:
            continue
        graph, tensors = captured_training_step(module, inputs, labels)
        cg = lower(graph, device="cpu")
        params = list(module.parameters())

        def eager():
            loss = tp.nn.functional.cross_entropy(module(*inputs), labels)
            tp.autograd.grad(loss, params)
        t_eager, t_compiled = paired_min(eager, lambda: cg(*tensors), batch=5, rounds=10)
        line(f"{name} ({len(graph.nodes)} -> {len(cg.graph.nodes)} ops)", t_eager,
             t_compiled)


def bench_compile():
    """Part 2: tp.compile's compiled module against the eager one."""
    print("\ntp.compile: compiled vs eager")
    for name, (module, inputs, labels) in models().items():
        compiled = tp.compile(module)
        if labels is None:
            def eager():
                with tp.no_grad():
                    module(*inputs)

            def fast():
                with tp.no_grad():
                    compiled(*inputs)
            t_eager, t_fast = paired_min(eager, fast, batch=20, rounds=15)
            line(f"{name}: forward", t_eager, t_fast)
            continue
        module.train()
        optimizer = tp.optim.Adam(module.parameters(), lr=1e-3)

        def step(model):
            def run():
                optimizer.zero_grad()
                loss = tp.nn.functional.cross_entropy(model(*inputs), labels)
                loss.backward()
                optimizer.step()
            return run
        t_eager, t_fast = paired_min(step(module), step(compiled), batch=5, rounds=10)
        line(f"{name}: training step", t_eager, t_fast)


def bench_launches():
    """The Triton kernels one forward launches on cuda, eager and compiled."""
    from tensorplay.compiler.codegen_triton import count_launches
    print("\ncuda: Triton kernels launched by one forward (eager -> compiled)")
    for name, (module, inputs, _) in models("cuda").items():
        module.eval()
        if name == "LSTM-cell loop":
            module.steps = 3        # the interpreter runs every program on the host
        compiled = tp.compile(module)
        with tp.no_grad():
            compiled(*inputs)       # captured and compiled on the first call
            eager = count_launches(module, *inputs)
            fused = count_launches(compiled, *inputs)
        print(f"  {name:<34}{eager:4d} -> {fused:4d} launches")


if __name__ == "__main__":
    bench_lowering()
    bench_joint_graphs()
    bench_compile()
    if "--cuda" in sys.argv:
        bench_launches()
    print("\ntarget: LSTM-cell loop >= 1.5x compiled; no model slower compiled")
