"""Embedding: a lookup table of num_embeddings vectors of size embedding_dim; EmbeddingBag:
the sums, means or maxima of bags of its rows.

`weight[i]` is the vector of index i; the default init is N(0, 1) with the padding row
(if any) zeroed, and that row never receives a gradient.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(op, padding_idx, num_embeddings):
    """padding_idx in [-num_embeddings, num_embeddings), negative counted from the end."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ArgumentError(f"{op}(): argument 'padding_idx' must be within num_embeddings "
                            f"[-{num_embeddings}, {num_embeddings}), but got {padding_idx}",
                            op=op, arg="padding_idx")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


class Embedding(Module):
    """input (any shape, integer indices) -> input.shape + (embedding_dim,).

    max_norm: rows looked up are first rescaled in place to norm <= max_norm (norm_type).
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index("Embedding", padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(tp.empty(num_embeddings, embedding_dim, device=device,
                                             dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(f"Embedding(): argument '_weight' must have shape "
                                 f"({num_embeddings}, {embedding_dim}), but got "
                                 f"{fmt_shape(tuple(_weight.shape))}", op="Embedding",
                                 arg="_weight")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        with tp.no_grad():
            self.weight.normal_()
            self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with tp.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` (2-D; shared, not copied), frozen
        (requires_grad=False) unless freeze=False. The padding row is not zeroed."""
        if embeddings.dim() != 2:
            raise ShapeError(f"Embedding.from_pretrained(): argument 'embeddings' must be 2-D "
                             f"(num_embeddings, embedding_dim), but got shape "
                             f"{fmt_shape(tuple(embeddings.shape))}",
                             op="Embedding.from_pretrained", arg="embeddings")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)


class EmbeddingBag(Module):
    """Bags of rows of a table reduced by mode ('sum', 'mean' or 'max'), without building
    the (bags, length, embedding_dim) tensor of the rows in between.

    forward(input, offsets=None, per_sample_weights=None): input 2-D (B, L) is B bags of L
    indices; input 1-D needs offsets, the start of each bag (see F.embedding_bag).
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_index("EmbeddingBag", padding_idx, num_embeddings)
        if _weight is None:
            self.weight = Parameter(tp.empty(num_embeddings, embedding_dim, device=device,
                                             dtype=dtype))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(f"EmbeddingBag(): argument '_weight' must have shape "
                                 f"({num_embeddings}, {embedding_dim}), but got "
                                 f"{fmt_shape(tuple(_weight.shape))}", op="EmbeddingBag",
                                 arg="_weight")
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self):
        with tp.no_grad():
            self.weight.normal_()
            if self.padding_idx is not None:
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is `embeddings` (2-D; shared, not copied), frozen
        unless freeze=False."""
        if embeddings.dim() != 2:
            raise ShapeError(f"EmbeddingBag.from_pretrained(): argument 'embeddings' must be "
                             f"2-D (num_embeddings, embedding_dim), but got shape "
                             f"{fmt_shape(tuple(embeddings.shape))}",
                             op="EmbeddingBag.from_pretrained", arg="embeddings")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
