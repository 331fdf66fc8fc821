"""Composite kernels: ops written in terms of other ops (or of tensor metadata).

Registered at the Composite key, they serve every backend that has no kernel of
its own. When an op here has no derivatives.yaml entry, its decomposition runs
above autograd too ("composite implicit autograd"): the ops it calls record the
graph, so it needs no backward formula. One module per op family
(tensorplay/codegen/families.py): `dispatch: {Composite: views.view}` is views.py:view.
"""
