"""The scores of the windows the guard has already read, per API key.

A conversation resends its earlier turns with every new one, so without this the guard would read
a long chat again in full at each turn. A window's scores depend on its token ids alone (the
encoder quantises each token on its own, so nothing else in a batch changes them), so a window read
once for a key is not read again for it. Entries are scoped by key: one tenant's reading never
answers another's, so how fast a check is says nothing about what other tenants sent. A request
without a scope (zero data retention) is looked up in nothing and leaves nothing behind. Within
one request each distinct window is read once whatever its scope: a text repeating a sentence a
thousand times costs one reading of it.
"""
import hashlib
from collections import OrderedDict

import numpy as np


def window_key(window):
    return hashlib.blake2b(np.asarray(window, np.int32).tobytes(), digest_size=16).digest()


class SpanCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.entries = OrderedDict()  # (scope, window key) -> scores, least recently used first

    def scores(self, windows_per_text, scope, read):
        """Per text, the scores of each of its windows, and how many windows were read: `read`
        scores a list of windows, and is given each distinct window not known for `scope` once."""
        keys = [[window_key(w) for w in windows] for windows in windows_per_text]
        known, unread = {}, {}
        for windows, text_keys in zip(windows_per_text, keys):
            for window, key in zip(windows, text_keys):
                if key in known or key in unread:
                    continue
                hit = self.entries.get((scope, key)) if scope is not None else None
                if hit is None:
                    unread[key] = window
                else:
                    self.entries.move_to_end((scope, key))
                    known[key] = hit
        if unread:
            for key, row in zip(unread, read(list(unread.values()))):
                known[key] = row
                if scope is not None:
                    self.remember((scope, key), row)
        return [[known[key] for key in text_keys] for text_keys in keys], len(unread)

    def remember(self, entry, row):
        if self.capacity <= 0:
            return
        self.entries[entry] = row
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
