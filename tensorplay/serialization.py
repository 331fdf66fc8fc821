"""(being written)"""


def save(obj, f):
    raise NotImplementedError


def load(f):
    raise NotImplementedError
