"""Dropout layers: random zeroing in training (`m.train()`), the identity in eval.

    Dropout            each element, kept ones scaled by 1 / (1 - p)
    Dropout1d/2d/3d    whole channels of (N, C, L) / (N, C, H, W) / (N, C, D, H, W)
    AlphaDropout       SELU-preserving (keeps mean 0 and variance 1)
    FeatureAlphaDropout  alpha dropout of whole channels
"""
from __future__ import annotations

from tensorplay.errors import ArgumentError
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            name = type(self).__name__
            raise ArgumentError(f"{name}(): dropout probability has to be between 0 and 1, "
                                f"but got {p} (argument 'p')", op=name, arg="p")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
