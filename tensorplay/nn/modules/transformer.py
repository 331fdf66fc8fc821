"""The Transformer of "Attention Is All You Need": encoder and decoder layers, their
stacks, and `Transformer`, with PyTorch's arguments and submodule names (self_attn,
linear1, dropout, linear2, norm1..3, dropout1..3, multihead_attn, layers.N), so that state
dicts exchange with torch.

One encoder layer, post-norm (norm_first=False) or pre-norm (norm_first=True):

    post-norm:  x = norm1(x + sa(x));        x = norm2(x + ff(x))
    pre-norm:   x = x + sa(norm1(x));        x = x + ff(norm2(x))

    sa(x) = dropout1(self_attn(x, x, x))
    ff(x) = dropout2(linear2(dropout(activation(linear1(x)))))

A decoder layer adds, between the two, cross-attention on the encoder's output
(`memory`) through multihead_attn, norm2 and dropout2; its feed-forward block uses norm3
and dropout3.

Masks are those of MultiheadAttention (bool True = not attended, or float, added). There
are no nested tensors here, so PyTorch's inference "fast paths" (which drop the padded
positions and return zeros there) do not exist: every call computes the plain math, as
PyTorch does in training.
"""
from __future__ import annotations

import copy

import tensorplay as tp
from tensorplay.errors import ShapeError, fmt_shape
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.attention import MultiheadAttention, _canonical_mask
from tensorplay.nn.modules.container import ModuleList
from tensorplay.nn.modules.dropout import Dropout
from tensorplay.nn.modules.linear import Linear
from tensorplay.nn.modules.module import Module
from tensorplay.nn.modules.normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]


def _activation(name_or_fn, where):
    """"relu" / "gelu" (PyTorch's two names) or any callable (a function or a module)."""
    if isinstance(name_or_fn, str):
        if name_or_fn == "relu":
            return F.relu
        if name_or_fn == "gelu":
            return F.gelu
        raise ValueError(f"{where}(): activation should be 'relu', 'gelu' or a callable, "
                         f"but got {name_or_fn!r}")
    if not callable(name_or_fn):
        raise TypeError(f"{where}(): activation should be 'relu', 'gelu' or a callable, but "
                        f"got {type(name_or_fn).__name__}")
    return name_or_fn


def _clones(module, n):
    """n independent copies (copy.deepcopy: new Parameters with the same values)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz): 0 on and below the diagonal, -inf above (position i sees 0..i)."""
    return tp.triu(tp.full((sz, sz), float("-inf"), device=device, dtype=dtype), diagonal=1)


def _seq_len(x, batch_first):
    """The sequence length of (S, E), (S, N, E) or, with batch_first, (N, S, E)."""
    if x.dim() == 2:
        return x.shape[0]
    return x.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal, size):
    """is_causal as given, or (None) whether `mask` equals the (size, size) causal mask.
    True lets attention apply the causal masking itself where nothing else needs the
    mask (see multi_head_attention_forward)."""
    if is_causal is not None or mask is None:
        return is_causal is True
    causal = _square_subsequent_mask(size, device=mask.device, dtype=mask.dtype)
    if tuple(mask.shape) != tuple(causal.shape):
        return False
    return bool((mask == causal).all())


# ---- layers -------------------------------------------------------------------------
class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and a
    LayerNorm (after it, or before it with norm_first)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerEncoderLayer")

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention on the target, cross-attention on `memory` (the encoder's output),
    then a feed-forward block; residuals and LayerNorms as in the encoder layer."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


# ---- stacks -------------------------------------------------------------------------
class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` (each with its own weights), then `norm`.

    enable_nested_tensor and mask_check are accepted for PyTorch's signature: they steer
    its nested-tensor fast path, which does not exist here."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder(): encoder_layer must be a Module, but got "
                            f"{type(encoder_layer).__name__}")
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        op = "TransformerEncoder.forward"
        src_key_padding_mask = _canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            mask.dtype if mask is not None else None, "mask", src.dtype, op=op, stacklevel=4)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, op=op)
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first",
                              False)
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal,
                           src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer`, each attending to the same `memory`, then
    `norm`."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        if not isinstance(decoder_layer, Module):
            raise TypeError(f"TransformerDecoder(): decoder_layer must be a Module, but got "
                            f"{type(decoder_layer).__name__}")
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first",
                              False)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _seq_len(tgt, batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """An encoder (num_encoder_layers layers and a final LayerNorm) and a decoder
    (num_decoder_layers and a LayerNorm); every weight matrix re-initialised with
    xavier_uniform_, as PyTorch does."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False,
                 norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise ShapeError(f"Transformer.forward(): 'src' and 'tgt' must have the same "
                             f"batch size (dim {batch_dim}), but got shapes "
                             f"{fmt_shape(src.shape)} and {fmt_shape(tgt.shape)}",
                             op="Transformer.forward", arg="tgt")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer.forward(): the last dimension of 'src' and 'tgt' "
                             f"must be d_model={self.d_model}, but got shapes "
                             f"{fmt_shape(src.shape)} and {fmt_shape(tgt.shape)}",
                             op="Transformer.forward", arg="src")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The causal mask (sz, sz): float -inf above the diagonal, 0 elsewhere."""
        return _square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
