"""torch.nn.utils.stateless: PyTorch 1.x's home of functional_call, deprecated since 2.0
in favour of torch.func.functional_call, which TensorPlay serves (tensorplay/func)."""
import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """tp.func.functional_call, with PyTorch's deprecation warning."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch "
                  "2.0 and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from tensorplay.func.functional_call import functional_call as call
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                strict=strict)
