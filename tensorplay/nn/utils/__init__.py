"""`tp.nn.utils`: gradient clipping, parameter/vector conversion, packed sequences
(tp.nn.utils.rnn), parametrizations (tp.nn.utils.parametrize, .parametrizations) and the
older hook forms of weight and spectral normalisation."""
from tensorplay.nn.utils import parametrizations, parametrize, rnn, stateless  # noqa: F401
from tensorplay.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from tensorplay.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tensorplay.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from tensorplay.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "parametrizations", "parametrize",
           "remove_spectral_norm", "remove_weight_norm", "rnn", "spectral_norm", "stateless",
           "vector_to_parameters", "weight_norm"]
