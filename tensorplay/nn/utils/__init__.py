"""`tp.nn.utils`: gradient clipping, parameter/vector conversion, packed sequences
(tp.nn.utils.rnn)."""
from tensorplay.nn.utils import rnn, stateless  # noqa: F401
from tensorplay.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from tensorplay.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "rnn", "stateless", "vector_to_parameters"]
