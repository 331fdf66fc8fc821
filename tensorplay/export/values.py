"""The values of a captured graph: its tensors (`Value`) and the ints that follow
dynamic input sizes (`SymInt`)."""
from __future__ import annotations

from dataclasses import dataclass

from tensorplay.errors import fmt_shape


@dataclass(frozen=True)
class SymInt:
    """An int that depends on dynamic input sizes: `const + sum(coef * size)`, `terms`
    a tuple of ((input position, dim), coef, name). Capture finds it by running the model
    at two sizes of each dynamic dim (tensorplay/export/dynamic.py)."""
    const: int
    terms: tuple

    def evaluate(self, inputs):
        return self.const + sum(c * inputs[pos].shape[dim] for (pos, dim), c, _ in self.terms)

    def __repr__(self):
        parts = [(f"{c}*{name}" if c != 1 else name) for _, c, name in self.terms]
        if self.const:
            parts.append(str(self.const))
        return " + ".join(parts) or "0"


@dataclass
class Value:
    """A tensor of the graph: `kind` is 'placeholder', 'constant' or 'node'."""
    name: str
    kind: str
    dtype: object
    shape: tuple

    def type_text(self):
        return f"{self.dtype.name}{fmt_shape(self.shape)}"

    def __repr__(self):
        return self.name
