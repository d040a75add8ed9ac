"""LocalStore: the in-process rendezvous store the threads-as-ranks runs use."""

import datetime
import threading

import pytest

from inceptionn.drivers.collectives.transports import LocalStore


def test_the_local_store_waits_for_its_keys_and_times_out():
    s = LocalStore()
    threading.Timer(0.05, lambda: s.set("a", "x")).start()
    s.wait(["a"], datetime.timedelta(seconds=5))
    assert s.get("a") == b"x"
    with pytest.raises(TimeoutError, match="'b'"):
        s.wait(["a", "b"], datetime.timedelta(seconds=0.05))
    with pytest.raises(KeyError):
        s.get("b")
