"""The hook's host snapshots of CPU buckets (HookWorker.host_snapshot): two buffers per
bucket index take turns, so a bucket's pages are not faulted in again every step, and
no buffer is refilled while its exchange is pending or while the step after it may
still read it."""

import numpy as np
import pytest
import torch

from inceptionn.ddp_hook import IncState


def _done():
    f = torch.futures.Future()
    f.set_result(None)
    return f


def test_buffers_take_turns_and_a_pending_one_is_never_refilled():
    w = IncState(method="none").worker
    bucket = [torch.full((1000,), float(i)) for i in range(6)]
    a = w.host_snapshot(0, bucket[0], _done())
    b = w.host_snapshot(0, bucket[1], _done())
    assert a.data_ptr() != b.data_ptr()            # the step after keeps its own
    c = w.host_snapshot(0, bucket[2], _done())
    assert c.data_ptr() == a.data_ptr() and torch.equal(c, bucket[2])
    assert torch.equal(b, bucket[1])               # the other one untouched
    pending = torch.futures.Future()
    d = w.host_snapshot(0, bucket[3], pending)     # b's turn: b is done, reused
    assert d.data_ptr() == b.data_ptr()
    e = w.host_snapshot(0, bucket[4], _done())     # c's turn
    f = w.host_snapshot(0, bucket[5], _done())     # d's turn, but d is pending: a new one
    assert f.data_ptr() not in (d.data_ptr(), e.data_ptr())
    assert torch.equal(d, bucket[3]) and torch.equal(f, bucket[5])


def test_other_buckets_sizes_and_objects_without_an_index_get_their_own():
    w = IncState(method="none").worker
    x, y = torch.ones(10), torch.ones(20)
    for _ in range(2):
        w.host_snapshot(0, x, _done())
    first = w.host_snapshot(1, x, _done())
    assert all(first.data_ptr() != s.data_ptr() for s, _ in w._snapshots[0])
    w.host_snapshot(1, x, _done())
    grown = w.host_snapshot(1, y, _done())         # a rebuilt bucket of another size
    assert grown.shape == y.shape and grown.data_ptr() != first.data_ptr()
    lone = w.host_snapshot(None, x, _done())       # a bucket-like object with no index()
    assert torch.equal(lone, x) and lone.data_ptr() != x.data_ptr()


def test_close_lets_the_buffers_go():
    state = IncState(method="none")
    w = state.worker
    w.host_snapshot(0, torch.ones(10), _done())
    state.close()
    assert not w._snapshots and not w._losses


def test_a_snapshot_adds_the_residual_in_and_zeroes_it():
    """Error feedback on the ring: the snapshot is bucket + residual in one pass and the
    residual (the bucket's loss buffer) is left zeroed, ready to record the exchange's
    loss; the exchange then neither compensates nor zeroes (tests/test_ddp_hook.py and
    test_ddp_hook_resume.py train bit for bit as before)."""
    w = IncState(decide="ring").worker
    r = np.full(10, 0.5, np.float32)
    snap = w.host_snapshot(0, torch.ones(10), _done(), r)
    assert torch.equal(snap, torch.full((10,), 1.5)) and not r.any()
    again = w.host_snapshot(0, torch.ones(10), _done())
    assert torch.equal(again, torch.ones(10))
    with pytest.raises(ValueError, match="residual"):
        w.host_snapshot(None, torch.ones(10), _done(), r)
