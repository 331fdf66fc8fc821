"""Grad modes: whether ops record the backward graph, per thread.

Turning grad mode off (`set_grad_mode`, dispatch/tls.py) writes two things: the flag
the code reads (`grad_state.enabled`), and the thread's mask that removes the
REQUIRES_GRAD flag from every call's key set, so the dispatch loop skips the autograd
wrappers: nothing is recorded and no op pays for it. The state is thread-local, like
PyTorch's: a worker thread in `no_grad` does not switch off recording for the main
thread.

`inference_mode` goes further than `no_grad`: it also excludes the autograd dispatch
keys, so the autograd wrappers are not even called, and kernels mark their outputs as
inference tensors (no autograd key, no version counter bumps).

Every mode object works both as a context manager and as a decorator:

    with tp.no_grad():          @tp.no_grad()
        y = model(x)            def predict(x): ...
"""
from __future__ import annotations

import functools
import inspect

from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import grad_state, local_keys, set_grad_mode

__all__ = ["grad_state", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled"]


def is_grad_enabled():
    return grad_state.enabled


def is_inference_mode_enabled():
    return grad_state.inference


class _ModeContext:
    """Base of the mode objects: `_enter` changes the state and returns what `_exit`
    needs to restore it. A stack of saved states makes one object reentrant."""

    def __init__(self):
        self._saved = []

    def __enter__(self):
        self._saved.append(self._enter())
        return self

    def __exit__(self, *exc):
        self._exit(self._saved.pop())
        return False

    def clone(self):
        """A fresh object with the same settings (each decorated call gets its own)."""
        return type(self)()

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, func):
        """Only the generator's own steps run in the mode, not the caller's code
        between two `next()` calls (as in PyTorch)."""
        @functools.wraps(func)
        def generator(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return generator

    def _enter(self):
        raise NotImplementedError

    def _exit(self, saved):
        raise NotImplementedError


class _SetGrad(_ModeContext):
    """Shared by no_grad / enable_grad: set `enabled` on entry, restore on exit."""

    MODE = True

    def _enter(self):
        return set_grad_mode(self.MODE)

    def _exit(self, prev):
        set_grad_mode(prev)


class no_grad(_SetGrad):
    """Ops inside do not record the backward graph; their outputs do not require grad."""

    MODE = False


class enable_grad(_SetGrad):
    """Turn recording back on inside a `no_grad` block. (Inside inference_mode the
    autograd keys stay excluded, so nothing records there: use inference_mode(False).)"""

    MODE = True


class set_grad_enabled(_ModeContext):
    """`set_grad_enabled(False)` switches grad mode at once, so it works as a plain
    call too; as a context manager it restores the mode from before the call."""

    def __init__(self, mode):
        super().__init__()
        self.mode = bool(mode)
        self._before_init = set_grad_mode(self.mode)

    def __call__(self, func):
        # Used as a decorator: undo the switch __init__ made; each call switches anew.
        set_grad_mode(self._before_init)
        return super().__call__(func)

    def clone(self):
        obj = object.__new__(set_grad_enabled)
        _ModeContext.__init__(obj)
        obj.mode = self.mode
        obj._before_init = None
        return obj

    def _enter(self):
        if self._before_init is not None:
            # `with set_grad_enabled(m):` -- __init__ already switched; restore to before it.
            prev, self._before_init = self._before_init, None
            return prev
        return set_grad_mode(self.mode)

    def _exit(self, prev):
        set_grad_mode(prev)


class inference_mode(_ModeContext):
    """Like no_grad, and the tensors made inside are inference tensors: they carry no
    autograd key and no version bumps, which makes every op cheaper. They cannot be
    saved for backward later (clone one to get a normal tensor).

    `inference_mode(False)` inside an inference block turns normal mode back on."""

    def __init__(self, mode=True):
        super().__init__()
        self.mode = bool(mode)

    def clone(self):
        return inference_mode(self.mode)

    def _enter(self):
        saved = (set_grad_mode(not self.mode), grad_state.inference, local_keys.excluded)
        grad_state.inference = self.mode
        if self.mode:
            local_keys.excluded |= AUTOGRAD_MASK
        else:
            local_keys.excluded &= ~AUTOGRAD_MASK
        return saved

    def _exit(self, saved):
        enabled, grad_state.inference, local_keys.excluded = saved
        set_grad_mode(enabled)
