"""`tp.nn`: neural-network building blocks, as in `torch.nn`.

    tp.nn.Module, tp.nn.Parameter     the base class and the tensors it registers
    tp.nn.Linear, tp.nn.Conv2d, ...   layers (tensorplay/nn/modules/, one file a topic)
    tp.nn.functional                  the functional forms (F.relu, F.conv2d, ...)
    tp.nn.init                        PyTorch's initialisation rules
    tp.nn.utils                       clip_grad_norm_, parameters_to_vector, ...
    tp.nn.parallel                    DistributedDataParallel (loaded on first use: it
                                      imports torch.distributed)
"""
from tensorplay.nn import functional  # noqa: F401
from tensorplay.nn.parameter import Buffer, Parameter  # noqa: F401
from tensorplay.nn.modules import *  # noqa: F401,F403
from tensorplay.nn import grad, init, utils  # noqa: F401,E402


def __getattr__(name):
    if name == "parallel":
        import importlib
        return importlib.import_module("tensorplay.nn.parallel")
    raise AttributeError(f"module 'tensorplay.nn' has no attribute '{name}'")
