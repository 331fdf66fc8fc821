"""The forward's columns, kept for the weight gradient: one slot per thread.

A convolution's weight gradient reads the forward's columns (its im2col) again. A forward
that may be followed by a weight gradient leaves its columns here under a key naming its
input (conv.py's _keep_key: the storage, held weakly, the view's place in it, its version,
the dtype and the geometry), and the backward given the same key takes them
instead of copying them a second time. One slot: the last forward's, and in a network the
last layer's backward runs first; any other backward copies its columns again. Both forms
keep here: the general one (conv.py, when one chunk holds the whole batch) and the
same-size one (_conv_same.py, into a buffer of the whole batch, chunk by chunk), whose key
ends with its name, so that neither takes the other's.
"""
from __future__ import annotations

import threading


class _Slot(threading.local):
    def __init__(self):
        self.key = None
        self.columns = None

    def keep(self, key, columns):
        """`columns` (whatever the form keeps: an array, conv.py's _Columns) under `key`."""
        self.key, self.columns = key, columns

    def get(self, key):
        """The columns kept under `key`, or None: another forward kept its own since, the
        input was written to (its version is in the key), or it is gone."""
        if key is None or self.key != key or self.key[0]() is None:
            return None
        return self.columns


last_kept = _Slot()
