"""The passes of tp.compile's lowering, each a function Graph -> Graph in a module of
its own (read them in this order):

    decomposition.py          Composite ops opened into the ops they are written with
    constant_folding.py       what depends on constants only, computed at compile time
    common_subexpressions.py  each distinct computation once
    dead_code.py              what nobody reads, dropped
    fusion.py                 chains of pointwise ops grouped into one kernel (this one
                              returns a schedule for the code generators, not a Graph)
"""
from tensorplay.compiler.passes.common_subexpressions import eliminate_common_subexpressions
from tensorplay.compiler.passes.constant_folding import fold_constants
from tensorplay.compiler.passes.dead_code import eliminate_dead_code
from tensorplay.compiler.passes.decomposition import decompose_composites
from tensorplay.compiler.passes.fusion import FusedGroup, fuse_pointwise


def optimize(graph, device="cpu", accept_decomposition=None):
    """The graph passes in order: decompose, fold, CSE, then DCE (which also drops what
    the others left unread)."""
    graph = decompose_composites(graph, device, accept_decomposition)
    graph = fold_constants(graph)
    graph = eliminate_common_subexpressions(graph)
    return eliminate_dead_code(graph)


__all__ = ["optimize", "decompose_composites", "fold_constants",
           "eliminate_common_subexpressions", "eliminate_dead_code", "fuse_pointwise",
           "FusedGroup"]
