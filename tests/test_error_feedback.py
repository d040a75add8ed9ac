"""Error feedback (drivers/collectives/memory.py): the memory's compensate/update per
parameter across a change of bucket layout, and the loss each rank records around a
real ring (threads, TCP): summed over ranks it is the exchange's whole error, so what
the codec drops arrives later instead of never."""


import numpy as np
import pytest
from ranks import run_ranks
from torch.distributed import HashStore

from inceptionn.drivers.collectives import Ring, WireCodec
from inceptionn.drivers.collectives.codecs import ScaledCodec
from inceptionn.drivers.collectives.memory import LossRecorder, Memory


def test_memory_is_kept_per_parameter_whatever_the_bucket_layout():
    m = Memory()
    x = np.zeros(6, np.float32)
    assert np.array_equal(m.compensate(x, [("a", 2), ("b", 4)]), np.zeros(6))  # empty
    m.update([("a", 2), ("b", 4)], np.arange(6, dtype=np.float32))
    # DDP's rebuild: b first, then a, then a parameter never seen, in one bucket.
    y = m.compensate(np.ones(9, np.float32), [("b", 4), ("c", 3), ("a", 2)])
    assert y.tolist() == [3, 4, 5, 6, 1, 1, 1, 1, 2]
    # Or split over two buckets: each finds its own.
    assert m.compensate(np.zeros(2, np.float32), [("a", 2)]).tolist() == [0, 1]
    m.update([("a", 2)], np.array([7, 8], np.float32))
    assert m.compensate(np.zeros(6, np.float32), [("b", 4), ("a", 2)]).tolist() == \
        [2, 3, 4, 5, 7, 8]
    assert m.norm() == pytest.approx(np.sqrt(4 + 9 + 16 + 25 + 49 + 64))
    with pytest.raises(ValueError, match="had 2 values, now 3"):
        m.compensate(np.zeros(3, np.float32), [("a", 3)])
    with pytest.raises(ValueError, match="hold 5 values, its buffer 6"):
        m.compensate(np.zeros(6, np.float32), [("a", 2), ("c", 3)])


def test_the_recorder_refuses_values_from_outside_its_buffer():
    rec = LossRecorder(ScaledCodec(10))
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    rec.start(x)
    rec.encode(x[10:20])
    with pytest.raises(RuntimeError, match="outside the buffer"):
        rec.encode(x[10:20].copy())
    loss = rec.stop()
    assert np.any(loss[10:20]) and not np.any(loss[:10]) and not np.any(loss[20:])
    with pytest.raises(RuntimeError, match="not started"):
        rec.stop()


def _rings(p, steps, codec_for, grads_for, chunk=1000):
    """p ranks in threads, a ring each with a LossRecorder of codec_for(); per step the
    memory compensates, the ring sums, the loss updates it. ({rank: [(sent, result)]},
    memories, errors)."""
    store, out, mems = HashStore(), {}, {}

    def body(r):
        rec = LossRecorder(codec_for())
        mem, hist = Memory(), []
        with Ring.from_store(store, r, p, wire="software", codec=rec, k=rec.k,
                             chunk=chunk, timeout=20) as ring:
            for s in range(steps):
                g = grads_for(r, s)
                layout = [("w", g.size - 7), ("b", 7)]
                x = mem.compensate(g.copy(), layout)
                sent = x.copy()
                rec.start(x)
                ring.allreduce(x)
                mem.update(layout, rec.stop())
                hist.append((sent, x.copy()))
        out[r], mems[r] = hist, mem

    return out, mems, run_ranks(p, body)


@pytest.mark.parametrize("p", [2, 3, 4])
def test_ranks_agree_and_their_losses_add_up_to_the_exchanges_error(p):
    rng = np.random.default_rng(p)
    grads = {(r, s): (rng.standard_normal(10_007) * 1e-5).astype(np.float32)
             for r in range(p) for s in range(3)}
    out, mems, errs = _rings(p, 3, lambda: ScaledCodec(10), lambda r, s: grads[(r, s)])
    assert not errs, errs
    for s in range(3):
        results = [out[r][s][1] for r in range(p)]
        assert all(np.array_equal(results[0].view(np.uint32), y.view(np.uint32))
                   for y in results)
    # The last step: what went in (compensated) = what came out + what the ranks kept.
    sent = sum(out[r][2][0].astype(np.float64) for r in range(p))
    kept = sum(np.concatenate([mems[r].residual["w"], mems[r].residual["b"]])
               .astype(np.float64) for r in range(p))
    got = out[0][2][1].astype(np.float64)
    assert np.abs(kept).max() > 0.1 * np.abs(sent).max()       # the codec dropped much
    # Up to float32 rounding of the partial sums (a few ulps of the sums).
    assert np.abs(sent - got - kept).max() <= 1e-6 * np.abs(sent).max()


def test_what_the_absolute_bound_drops_arrives_later_with_the_memory():
    """Gradients all below 2^-10: the absolute bound sends zeros every step; the memory
    grows until it crosses the bound and is sent. Nothing is lost: everything that went
    in either arrived or is still kept."""
    g = np.full(4096, 3e-4, np.float32)
    steps = 12
    out, mems, errs = _rings(2, steps, lambda: WireCodec("bounded", 10), lambda r, s: g)
    assert not errs, errs
    delivered = sum(out[0][s][1].astype(np.float64) for s in range(steps))
    kept = sum(np.concatenate([mems[r].residual["w"], mems[r].residual["b"]])
               for r in range(2))
    assert not np.any(out[0][0][1])                  # the first step: all dropped
    assert delivered.min() > 0.5 * 2 * steps * 3e-4  # most of it arrived in the end
    np.testing.assert_allclose(delivered + kept, 2 * steps * 3e-4, rtol=1e-5)
