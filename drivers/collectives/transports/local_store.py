"""LocalStore: a rendezvous store for ranks that are threads of one process (the
benchmarks' and the demo's collectives, the tests), with the part of torch's Store
interface the links use (set, get, wait), so that those runs need no torch."""

from __future__ import annotations

import datetime
import threading

__all__ = ["LocalStore"]


class LocalStore:
    """Keys to bytes in this process; `wait` blocks until every key is set."""

    def __init__(self):
        self._d: dict[str, bytes] = {}
        self._cv = threading.Condition()

    def set(self, key: str, value) -> None:
        with self._cv:
            self._d[key] = value.encode() if isinstance(value, str) else bytes(value)
            self._cv.notify_all()

    def get(self, key: str) -> bytes:
        with self._cv:
            if key not in self._d:
                raise KeyError(f"{key!r} is not set")
            return self._d[key]

    def wait(self, keys, timeout: datetime.timedelta) -> None:
        with self._cv:
            if not self._cv.wait_for(lambda: all(k in self._d for k in keys),
                                     timeout.total_seconds()):
                missing = [k for k in keys if k not in self._d]
                raise TimeoutError(f"{missing} not set within {timeout.total_seconds():g} s")
