"""The three models `python -m tensorplay train --model ...` can train.

    mlp          digits: Flatten - Linear(64, 128) - ReLU - Dropout - Linear(128, 10)
    cnn          digits: two 3x3 convolutions with batch norm, one 2x2 max pool, a linear
                 head (98-99% test accuracy in 10 epochs of Adam; PyTorch agrees)
    transformer  text: a small character-level decoder (token + position embeddings,
                 pre-norm TransformerEncoderLayers under a causal mask, a linear head)
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay import nn


class DigitsMLP(nn.Sequential):
    """A one-hidden-layer perceptron on the flattened 8x8 image. `device` and `dtype` go
    to the layers, as in torch.nn (`device="meta"`: shapes only, no memory)."""

    def __init__(self, num_classes=10, hidden=128, dropout=0.2, *, device=None, dtype=None):
        at = {"device": device, "dtype": dtype}
        super().__init__(
            nn.Flatten(),
            nn.Linear(64, hidden, **at),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_classes, **at),
        )


class DigitsCNN(nn.Sequential):
    """conv(1->16) - BN - ReLU - conv(16->32) - BN - ReLU - maxpool 2 - dropout - linear.

    Shapes for a batch of N:  (N, 1, 8, 8) -> (N, 16, 8, 8) -> (N, 32, 8, 8)
                              -> (N, 32, 4, 4) -> (N, 512) -> (N, 10)

    `device` and `dtype` go to the layers, as in torch.nn (`device="meta"`: shapes only).
    """

    def __init__(self, num_classes=10, width=16, dropout=0.25, *, device=None, dtype=None):
        at = {"device": device, "dtype": dtype}
        super().__init__(
            nn.Conv2d(1, width, 3, padding=1, **at),
            nn.BatchNorm2d(width, **at),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, **at),
            nn.BatchNorm2d(2 * width, **at),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(2 * width * 4 * 4, num_classes, **at),
        )


class CharTransformer(nn.Module):
    """A decoder-only transformer over characters.

    forward(ids: int64 (N, T)) -> logits (N, T, vocab_size), position t seeing only 0..t.
    """

    def __init__(self, vocab_size, context=32, d_model=64, nhead=4, num_layers=2,
                 dropout=0.1):
        super().__init__()
        self.context = context
        self.token = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(context, d_model)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model,
                                       dropout=dropout, batch_first=True, norm_first=True)
            for _ in range(num_layers)
        ])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        steps = ids.shape[1]
        if steps > self.context:
            raise ValueError(f"CharTransformer: {steps} tokens, but the context is "
                             f"{self.context}")
        positions = tp.arange(steps, device=ids.device)
        x = self.token(ids) + self.position(positions)
        mask = causal_mask(steps, ids.device)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.head(self.norm(x))

    @tp.no_grad()
    def generate(self, prompt, length, temperature=0.8, generator=None):
        """Extend `prompt` (int64 (T,)) by `length` tokens, each drawn from the softmax of
        the last position's logits / temperature. Returns the new tokens, int64 (length,)."""
        ids = prompt.reshape(1, -1)
        new = []
        for _ in range(length):
            logits = self(ids[:, -self.context:])[0, -1] / temperature
            nxt = tp.multinomial(tp.softmax(logits, -1), 1, generator=generator)
            new.append(int(nxt.item()))
            ids = tp.cat([ids, nxt.reshape(1, 1)], dim=1)
        return tp.tensor(new, dtype=tp.int64)


def causal_mask(steps, device):
    """Float mask (steps, steps): 0 on and below the diagonal, -inf above it (a position
    may not attend to later ones), as nn.Transformer.generate_square_subsequent_mask."""
    return tp.triu(tp.full((steps, steps), float("-inf"), device=device), diagonal=1)


def build(name, num_classes, context=32):
    """The model called `name` ('mlp', 'cnn' or 'transformer')."""
    if name == "mlp":
        return DigitsMLP(num_classes)
    if name == "cnn":
        return DigitsCNN(num_classes)
    if name == "transformer":
        return CharTransformer(num_classes, context=context)
    raise ValueError(f"unknown model {name!r}; expected one of {MODELS}")


MODELS = ("mlp", "cnn", "transformer")
