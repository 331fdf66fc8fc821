"""The pictures of tp.utils.pictures: well-formed SVG that names what it draws (a graph
whose arrows never run through a box), and a matplotlib figure with the expected lines."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import tensorplay as tp
from tensorplay.errors import ArgumentError
from tensorplay.utils.pictures import draw_graph, draw_route, draw_table, plot_curves
from tensorplay.utils.logging_tensor import LoggingTensor

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg):
    """Every text line of the SVG, parsed as XML (so a malformed document fails here)."""
    root = ET.fromstring(svg._repr_svg_())
    assert root.tag == f"{SVG}svg"
    return ["".join(span.itertext()) for text in root.iter(f"{SVG}text")
            for span in text.iter(f"{SVG}tspan")]


def boxes(svg):
    root = ET.fromstring(str(svg))
    return [r for r in root.iter(f"{SVG}rect") if r.get("x") is not None]


def test_draw_graph_names_every_node_and_layers_it():
    w = tp.randn(3, 2, requires_grad=True)
    b = tp.zeros(2, requires_grad=True)
    x = tp.randn(4, 3)
    loss = (x.mm(w) + b).relu().sum()
    svg = draw_graph(loss, params={"w": w, "b": b})
    lines = texts(svg)
    for expected in ("output []", "SumBackward0", "ReluBackward0", "AddBackward0",
                     "MmBackward0", "(mm)", "self: [4, 3] float32", "w", "[3, 2] float32",
                     "b", "[2] float32"):
        assert expected in lines
    root = ET.fromstring(str(svg))
    arrows = [line for line in root.iter(f"{SVG}line") if line.get("marker-end")]
    assert len(arrows) == 6                                 # one arrow per edge
    # layered by depth: the output on top, the deepest leaf (w, below mm) at the bottom
    y_of = {}
    for text in root.iter(f"{SVG}text"):
        first = next(text.iter(f"{SVG}tspan")).text
        y_of[first] = float(text.get("y"))
    assert y_of["output []"] < y_of["SumBackward0"] < y_of["AddBackward0"] < \
        y_of["MmBackward0"] < y_of["w"]
    assert y_of["b"] < y_of["w"]


def test_draw_graph_of_several_outputs_with_a_shared_leaf():
    a = tp.ones(2, requires_grad=True)
    svg = draw_graph([a * 2, a.exp()])
    lines = texts(svg)
    assert lines.count("output [2]") == 2 and "MulBackward0" in lines and \
        "ExpBackward0" in lines
    assert lines.count("[2] float32") == 1        # the leaf is drawn once


def _crosses(segment, rect, inset=0.5):
    """Whether `segment` ((x1, y1), (x2, y2)) enters the inside of `rect` (x, y, w, h),
    shrunk by `inset` so that an arrow ending on a box's edge does not count (Liang-Barsky
    clipping: the part of the segment inside each of the four half-planes)."""
    (x1, y1), (x2, y2) = segment
    x, y, w, h = rect
    dx, dy = x2 - x1, y2 - y1
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, x1 - (x + inset)), (dx, (x + w - inset) - x1),
                 (-dy, y1 - (y + inset)), (dy, (y + h - inset) - y1)):
        if p == 0:
            if q < 0:
                return False          # parallel to this side and outside it
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def test_crossing_check_itself():
    box = (10.0, 10.0, 20.0, 10.0)
    assert _crosses(((0, 15), (40, 15)), box)          # straight through
    assert _crosses(((0, 0), (40, 30)), box)           # diagonally through
    assert not _crosses(((20, 0), (20, 10)), box)      # ends on the top edge
    assert not _crosses(((0, 25), (40, 25)), box)      # passes below
    assert not _crosses(((0, 0), (9, 30)), box)        # passes beside


def _graphs():
    p = tp.randn(3, requires_grad=True)
    q = tp.randn(3, requires_grad=True)
    yield ((p * q).sin() + p).sum()                     # p is used two rows apart
    a = tp.randn(3, requires_grad=True)
    yield (a.exp().sin().cos() * a + a.tanh()).sum()    # a skip over three rows
    yield [a * 2, (a.exp() * p).sum(), ((p + q) * a).sin()]     # several outputs
    model = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.ReLU(), tp.nn.Linear(8, 2))
    yield tp.nn.functional.cross_entropy(model(tp.randn(5, 4)), tp.tensor([0, 1, 0, 1, 1]))


@pytest.mark.parametrize("n", range(4))
def test_no_arrow_of_draw_graph_runs_through_a_box(n):
    svg = draw_graph(list(_graphs())[n])
    root = ET.fromstring(str(svg))
    rects = [tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
             for r in boxes(svg)]
    segments = [((float(line.get("x1")), float(line.get("y1"))),
                 (float(line.get("x2")), float(line.get("y2"))))
                for line in root.iter(f"{SVG}line")]
    assert rects and segments
    through = [(s, r) for s in segments for r in rects if _crosses(s, r)]
    assert not through, f"arrow segments through boxes: {through}"
    # every arrow ends on the top edge of a box, coming from above
    for line in root.iter(f"{SVG}line"):
        if line.get("marker-end"):
            x2, y2 = float(line.get("x2")), float(line.get("y2"))
            assert any(abs(y2 - y) < 1e-6 and x <= x2 <= x + w for x, y, w, _ in rects)
            assert float(line.get("y1")) < y2


def test_draw_route_shows_every_hop_of_one_call():
    a = tp.ones(3, requires_grad=True)
    svg = draw_route(lambda: a + tp.ones(3))
    lines = texts(svg)
    # `a` is named from the lambda that made the call (dispatch/leaf_names.py)
    assert lines.count("add.Tensor(a: float32[3] requires_grad, float32[3], 1)") == 2
    assert "AutogradCPU -> tensorplay._generated.autograd_wrappers.add_Tensor" in lines
    assert "kernel" in lines and "cpu_kernels.pointwise.add" in lines
    kinds = [kind for _, kind, _ in svg.records]
    assert kinds[:3] == ["call", "key set", "dispatch"] and kinds[-1] == "result"
    assert [d for d, k, _ in svg.records if k == "call"] == [0, 1]   # the redispatch nests
    with tp.dispatch.explain(file=False) as ex:
        a.exp()
    assert [k for _, k, _ in draw_route(ex).records] == [k for _, k, _ in ex.records]
    with pytest.raises(ArgumentError, match="made no op call"):
        draw_route(lambda: None)


def test_draw_route_of_a_subclass_call_shows_the_python_key():
    x = LoggingTensor(tp.ones(2))
    lines = texts(draw_route(lambda: x.neg()))
    assert any(line.startswith("Python -> Python fallback") for line in lines)


def test_draw_table_marks_what_each_key_runs():
    svg = draw_table("add.Tensor")
    lines = texts(svg)
    rows = dict((key, (column, what)) for key, column, what in svg.rows)
    assert rows["CPU"] == ("registry", "cpu_kernels.pointwise.add (priority 0)")
    assert rows["AutogradCPU"] == ("kernel",
                                   "tensorplay._generated.autograd_wrappers.add_Tensor")
    assert rows["Python"][0] == "fallback" and rows["AutocastCPU"][0] == "fallthrough"
    for name in ("CPU", "AutogradCPU", "Python", "Meta", "kernel", "registry", "Composite",
                 "fallthrough", "cpu_kernels.pointwise.add (priority 0)"):
        assert name in lines
    assert "Vulkan" not in " ".join(lines)          # keys numbered ahead of their use
    assert [k for k, _, _ in svg.rows][:2] == ["DynamicLayerFrontMode", "VmapMode"]
    # a composite op: the backends run its decomposition, autograd runs it above
    comp = {k: (c, w) for k, c, w in draw_table("relu6").rows}
    assert comp["CPU"][0] == "Composite" and comp["AutogradCPU"][0] == "Composite"
    assert comp["Sparse"][0] == "miss"
    with pytest.raises(KeyError, match="no operator named 'ad.Tensor'"):
        draw_table("ad.Tensor")


def test_plot_curves_draws_one_panel_per_metric_and_one_line_per_split():
    history = {"train_loss": [2.0, 1.0, 0.5], "test_loss": [2.1, 1.3, 0.9],
               "train_acc": [0.2, 0.6, 0.8], "test_acc": [0.2, 0.5, 0.7]}
    fig = plot_curves(history, title="run 1")
    assert [ax.get_ylabel() for ax in fig.axes] == ["loss", "acc"]
    loss_lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in loss_lines] == ["train", "test"]
    assert list(loss_lines[1].get_ydata()) == [2.1, 1.3, 0.9]
    assert list(loss_lines[0].get_xdata()) == [1, 2, 3]
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"     # Jupyter shows it inline
    per_epoch = plot_curves([{"loss": 1.0}, {"loss": 0.5}], xlabel="step")
    (ax,) = per_epoch.axes
    assert ax.get_xlabel() == "step" and list(ax.get_lines()[0].get_ydata()) == [1.0, 0.5]
    with pytest.raises(ArgumentError, match="history"):
        plot_curves({})
