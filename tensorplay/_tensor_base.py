"""`TensorBase`: the slot that makes an object a tensor (a handle on a TensorImpl).

`tp.Tensor` derives from it and from the generated `TensorMethods`. Generated
front doors check `isinstance(x, TensorBase)`, which lets them be imported before
the `Tensor` class (whose methods *are* those front doors) exists.
"""


class TensorBase:
    __slots__ = ("_impl", "__weakref__")
