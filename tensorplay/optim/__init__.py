"""`tp.optim`: optimizers and learning-rate schedulers, with PyTorch's API and update rules.

    opt = tp.optim.Adam(model.parameters(), lr=1e-3)
    sched = tp.optim.lr_scheduler.StepLR(opt, step_size=10)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    sched.step()
"""
from tensorplay.optim import lr_scheduler  # noqa: F401
from tensorplay.optim.adadelta import Adadelta
from tensorplay.optim.adagrad import Adagrad
from tensorplay.optim.adam import Adam, AdamW
from tensorplay.optim.optimizer import Optimizer
from tensorplay.optim.rmsprop import RMSprop
from tensorplay.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
           "lr_scheduler"]
