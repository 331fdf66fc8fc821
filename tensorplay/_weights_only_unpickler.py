"""The unpickler behind `tp.load(f, weights_only=True)`: it runs a pickle's opcodes itself
and builds only what an allow-list names, so a file cannot make `load` run code.

Python's own `pickle.Unpickler` looks up any global a file names (`os.system` as easily
as `collections.OrderedDict`) and calls it. Here a GLOBAL opcode is answered from two
tables only: the names a state dict needs (`allowed_globals()`, built by
`tensorplay._torch_format`: PyTorch's tensor rebuild functions, storage types, dtypes,
`torch.Size`, `collections.OrderedDict`, ...) and what the user allow-listed with
`tp.serialization.add_safe_globals`. REDUCE and NEWOBJ may call only what came from
those tables, BUILD may set state only on their objects, APPEND/SETITEM may fill only
lists and dicts, and any other opcode is refused.

This follows PyTorch's `torch/_weights_only_unpickler.py` (opcode by opcode, messages
included) so that a file one accepts the other accepts, and a refusal reads the same.
"""
from __future__ import annotations

import collections
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
from pickle import (
    APPEND, APPENDS, BINFLOAT, BINGET, BININT, BININT1, BININT2, BINPERSID, BINPUT,
    BINUNICODE, BUILD, EMPTY_DICT, EMPTY_LIST, EMPTY_SET, EMPTY_TUPLE, GLOBAL, LONG1,
    LONG_BINGET, LONG_BINPUT, MARK, NEWFALSE, NEWOBJ, NEWTRUE, NONE, PROTO, REDUCE, SETITEM,
    SETITEMS, SHORT_BINSTRING, STOP, TUPLE, TUPLE1, TUPLE2, TUPLE3, UnpicklingError,
    decode_long,
)
from struct import unpack
from sys import maxsize

# Never allowed, even when a user allow-lists a function from them (PyTorch's list).
BLOCKLISTED_MODULES = ("sys", "os", "posix", "nt")

# ---- the user's allow-list (tp.serialization.add_safe_globals and friends) ------------
_marked_safe_globals = set()


def add_safe_globals(safe_globals):
    """Allow-list `safe_globals` (classes or functions, or `(obj, "module.name")` pairs
    for an object saved under another name) for every later weights-only load."""
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals | set(safe_globals)


def remove_safe_globals(safe_globals):
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals - set(safe_globals)


def get_safe_globals():
    return list(_marked_safe_globals)


def clear_safe_globals():
    global _marked_safe_globals
    _marked_safe_globals = set()


class safe_globals:   # noqa: N801 - PyTorch's name (a context manager, used as a function)
    """`with tp.serialization.safe_globals([MyClass]): tp.load(f)`: the allow-list grows
    for the block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info):
        remove_safe_globals(self.safe_globals)


def user_allowed_globals():
    """The user's allow-list as {"module.qualname": object}."""
    table = {}
    for entry in _marked_safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(entry)}")
            if type(entry[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(entry[1])}")
            obj, name = entry
            table[name] = obj
        else:
            table[f"{entry.__module__}.{entry.__qualname__}"] = entry
    return table


# ---- the unpickler --------------------------------------------------------------------
class Unpickler:
    """`Unpickler(file, allowed, persistent_load).load()`: `allowed` maps "module.name" to
    the object a GLOBAL of that name gives (the built-in table; the user's is read at
    each load so that `safe_globals` blocks take effect at once)."""

    def __init__(self, file, allowed, persistent_load, buildable, encoding="bytes"):
        self.read = file.read
        self.readline = file.readline
        self.allowed = allowed
        self.persistent_load = persistent_load
        self.buildable = buildable     # types whose state BUILD may set besides the tables'
        self.encoding = encoding
        self.memo = {}

    def find_global(self, module, name):
        full_path = f"{module}.{name}"
        if module in BLOCKLISTED_MODULES:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module "
                                  f"{module} is blocked.")
        if full_path in self.allowed:
            found = self.allowed[full_path]
            if isinstance(found, Exception):   # a name known to be unloadable, with the why
                raise found
            return found
        user = user_allowed_globals()
        if full_path in user:
            return user[full_path]
        if full_path.startswith("builtins."):
            full_path = full_path[len("builtins."):]
        raise UnpicklingError(
            f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
            f"Please use `tensorplay.serialization.add_safe_globals([{full_path}])` or the "
            f"`tensorplay.serialization.safe_globals([{full_path}])` context manager to "
            f"allowlist this global if you trust this class/function.")

    def is_allowed(self, obj):
        return (any(obj is v for v in self.allowed.values())
                or any(obj is v for v in user_allowed_globals().values()))

    def load(self):
        self.metastack = []
        self.stack = []
        read = self.read
        while True:
            key = read(1)
            if not key:
                raise EOFError
            op = key[0]
            # the risky opcodes: the only ones that look up or call anything
            if op == GLOBAL[0]:
                module = self.readline()[:-1].decode("utf-8")
                name = self.readline()[:-1].decode("utf-8")
                # protocol 2 writes Python 2's names (__builtin__.eval): read Python 3's
                if (module, name) in NAME_MAPPING:
                    module, name = NAME_MAPPING[(module, name)]
                elif module in IMPORT_MAPPING:
                    module = IMPORT_MAPPING[module]
                self.stack.append(self.find_global(module, name))
            elif op == NEWOBJ[0]:
                args = self.stack.pop()
                cls = self.stack.pop()
                if not self.is_allowed(cls):
                    raise UnpicklingError(f"Can only create new object for nn.Parameter or "
                                          f"classes allowlisted via `add_safe_globals` but "
                                          f"got {cls}")
                if cls is self.allowed.get("torch.nn.parameter.Parameter"):
                    self.stack.append(cls(*args))    # Parameter(data, requires_grad)
                else:
                    self.stack.append(cls.__new__(cls, *args))
            elif op == REDUCE[0]:
                args = self.stack.pop()
                func = self.stack[-1]
                if not self.is_allowed(func):
                    message = f"Trying to call reduce for unrecognized function {func}"
                    if hasattr(func, "__self__"):
                        message += f" which belongs to {func.__self__}"
                    raise UnpicklingError(message)
                self.stack[-1] = func(*args)
            elif op == BUILD[0]:
                state = self.stack.pop()
                self.build(self.stack[-1], state)
            # containers: only lists take APPEND, only dicts take SETITEM
            elif op == APPEND[0]:
                item = self.stack.pop()
                if type(self.stack[-1]) is not list:
                    raise UnpicklingError(f"Can only append to lists, but got "
                                          f"{type(self.stack[-1])}")
                self.stack[-1].append(item)
            elif op == APPENDS[0]:
                items = self.pop_mark()
                if type(self.stack[-1]) is not list:
                    raise UnpicklingError(f"Can only extend lists, but got "
                                          f"{type(self.stack[-1])}")
                self.stack[-1].extend(items)
            elif op == SETITEM[0]:
                value, k = self.stack.pop(), self.stack.pop()
                self.check_set_item_target("SETITEM")
                self.stack[-1][k] = value
            elif op == SETITEMS[0]:
                items = self.pop_mark()
                self.check_set_item_target("SETITEMS")
                for i in range(0, len(items), 2):
                    self.stack[-1][items[i]] = items[i + 1]
            elif op == MARK[0]:
                self.metastack.append(self.stack)
                self.stack = []
            elif op == TUPLE[0]:
                items = self.pop_mark()     # (first: it swaps self.stack back)
                self.stack.append(tuple(items))
            elif op == TUPLE1[0]:
                self.stack[-1] = (self.stack[-1],)
            elif op == TUPLE2[0]:
                self.stack[-2:] = [(self.stack[-2], self.stack[-1])]
            elif op == TUPLE3[0]:
                self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]
            # plain values
            elif op == NONE[0]:
                self.stack.append(None)
            elif op == NEWFALSE[0]:
                self.stack.append(False)
            elif op == NEWTRUE[0]:
                self.stack.append(True)
            elif op == EMPTY_TUPLE[0]:
                self.stack.append(())
            elif op == EMPTY_LIST[0]:
                self.stack.append([])
            elif op == EMPTY_DICT[0]:
                self.stack.append({})
            elif op == EMPTY_SET[0]:
                self.stack.append(set())
            elif op == BININT[0]:
                self.stack.append(unpack("<i", read(4))[0])
            elif op == BININT1[0]:
                self.stack.append(read(1)[0])
            elif op == BININT2[0]:
                self.stack.append(unpack("<H", read(2))[0])
            elif op == BINFLOAT[0]:
                self.stack.append(unpack(">d", read(8))[0])
            elif op == BINUNICODE[0]:
                size = unpack("<I", read(4))[0]
                if size > maxsize:
                    raise UnpicklingError("String is too long")
                self.stack.append(str(read(size), "utf-8", "surrogatepass"))
            elif op == SHORT_BINSTRING[0]:
                data = read(read(1)[0])
                self.stack.append(data if self.encoding == "bytes"
                                  else data.decode(self.encoding, "strict"))
            elif op == LONG1[0]:
                self.stack.append(decode_long(read(read(1)[0])))
            # storages (the tensors' bytes) come from outside the pickle
            elif op == BINPERSID[0]:
                pid = self.stack.pop()
                if type(pid) is not tuple and type(pid) is not int:
                    raise UnpicklingError(f"persistent_load id must be tuple or int, but got "
                                          f"{type(pid)}")
                if type(pid) is tuple and len(pid) > 0 and _ascii(pid[0]) != "storage":
                    raise UnpicklingError(f"Only persistent_load of storage is allowed, but "
                                          f"got {type(pid[0])}")
                self.stack.append(self.persistent_load(pid))
            # the memo: objects reached twice are one object
            elif op in (BINGET[0], LONG_BINGET[0]):
                index = read(1)[0] if op == BINGET[0] else unpack("<I", read(4))[0]
                self.stack.append(self.memo[index])
            elif op in (BINPUT[0], LONG_BINPUT[0]):
                index = read(1)[0] if op == BINPUT[0] else unpack("<I", read(4))[0]
                self.memo[index] = self.stack[-1]
            elif op == PROTO[0]:
                read(1)
            elif op == STOP[0]:
                return self.stack.pop()
            else:
                raise UnpicklingError(f"Unsupported operand {op}")

    def build(self, inst, state):
        """BUILD: set an object's state. Only on OrderedDicts (a state dict's `_metadata`),
        tensors and the allow-listed classes, as PyTorch's unpickler."""
        kind = type(inst)
        if kind is collections.OrderedDict:
            inst.__dict__.update(state)
        elif kind in self.buildable or self.is_allowed(kind):
            if hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
                return
            slotstate = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            if state:
                inst.__dict__.update(state)
            if slotstate:
                for k, v in slotstate.items():
                    setattr(inst, k, v)
        else:
            raise UnpicklingError(f"Can only build Tensor, Parameter, OrderedDict or types "
                                  f"allowlisted via `add_safe_globals`, but got {kind}")

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def check_set_item_target(self, opcode):
        if type(self.stack[-1]) not in (dict, collections.OrderedDict, collections.Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                  f"collections.Counter, but got {type(self.stack[-1])}")


def _ascii(value):
    return value.decode("ascii") if isinstance(value, bytes) else value
