"""`tp.optim`: optimizers and learning-rate schedulers, with PyTorch's API and update rules.

    opt = tp.optim.Adam(model.parameters(), lr=1e-3)
    sched = tp.optim.lr_scheduler.StepLR(opt, step_size=10)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    sched.step()
"""
from tensorplay.optim import lr_scheduler, swa_utils  # noqa: F401
from tensorplay.optim._stateless import swap_in_optimizer_params_and_state
from tensorplay.optim.adadelta import Adadelta
from tensorplay.optim.adafactor import Adafactor
from tensorplay.optim.adagrad import Adagrad
from tensorplay.optim.adam import Adam, AdamW
from tensorplay.optim.adamax import Adamax
from tensorplay.optim.asgd import ASGD
from tensorplay.optim.lbfgs import LBFGS
from tensorplay.optim.muon import Muon
from tensorplay.optim.nadam import NAdam
from tensorplay.optim.optimizer import Optimizer
from tensorplay.optim.radam import RAdam
from tensorplay.optim.rmsprop import RMSprop
from tensorplay.optim.rprop import Rprop
from tensorplay.optim.sgd import SGD
from tensorplay.optim.sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor", "LBFGS", "SparseAdam",
           "lr_scheduler", "Muon", "swa_utils", "swap_in_optimizer_params_and_state"]
