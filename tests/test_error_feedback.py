"""Error feedback (drivers/collectives/memory.py): the memory's compensate/update per
parameter across a change of bucket layout, and the loss each rank records around a
real ring (threads, TCP): summed over ranks it is the exchange's whole error, so what
the codec drops arrives later instead of never. On the float32 wires (emulate, and the
NIC through the software NIC) the scale-following bound and the recorded loss are the
software wire's, bit for bit."""


import numpy as np
import pytest
from ranks import run_ranks
from torch.distributed import HashStore

from inceptionn.drivers.collectives import CollectiveError, Ring, WireCodec
from inceptionn.drivers.collectives.codecs import SCALE_MAX, SCALE_MIN, ScaledCodec
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


def _rings(p, steps, codec_for, grads_for, chunk=1000, wire="software", call=None, **kw):
    """p ranks in threads, a ring each with a LossRecorder of codec_for(); per step the
    memory compensates, the ring sums, the loss updates it. ({rank: [(sent, result)]},
    memories, errors). call(r, make): where the ring is built (the bridge's hosts)."""
    store, out, mems = HashStore(), {}, {}

    def body(r):
        rec = LossRecorder(codec_for())
        mem, hist = Memory(), []
        opts = dict(kw)
        if "host" in opts and opts["host"] is None:
            opts["host"] = f"10.77.0.{r + 1}"     # a bridge host's address
        make = lambda: Ring.from_store(store, r, p, wire=wire, codec=rec, k=rec.k,  # noqa: E731
                                       chunk=chunk, timeout=20, **opts)
        with (call(r, make) if call else make()) as ring:
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


def _same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32),
                          np.asarray(b, np.float32).view(np.uint32))


def _extremes(p, n):
    """Per rank: gradients of every scale the scaling must survive, chunk by chunk
    (1000 values): tiny, subnormal, near float32's largest (sums still finite), mixed
    octaves, inf and NaN in one chunk, and zeros."""
    rng = np.random.default_rng(7)
    out = []
    for _ in range(p):
        parts = [rng.standard_normal(1000) * 1e-6, rng.standard_normal(1000) * 1e-41,
                 rng.uniform(-1, 1, 1000) * (3.4e38 / p),
                 np.concatenate([rng.standard_normal(500) * 1e-30,
                                 rng.standard_normal(500) * 1e20]),
                 np.concatenate([[np.inf, -np.inf, np.nan], rng.standard_normal(997)]),
                 np.zeros(1000)]
        x = np.concatenate(parts + [rng.standard_normal(n - 6000) * 1e-3])
        out.append(x.astype(np.float32))
    return out


@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("feedback", [False, True])
def test_the_emulated_nic_path_scales_and_records_as_the_software_wire(p, feedback):
    """wire="emulate" sends each chunk as float32 times 2^-s, s on the control connection,
    the roundtrip at the fixed k on receipt and 2^s after: the software wire's sums and
    recorded losses bit for bit, from subnormals to float32's largest values; float32's
    bytes on the data connections."""
    xs = _extremes(p, 9001)
    got = {}
    for wire in ("software", "emulate"):
        if feedback:
            out, mems, errs = _rings(p, 2, lambda: ScaledCodec(10), lambda r, s: xs[r],
                                     wire=wire)
            assert not errs, errs
            got[wire] = ([out[r][s][1] for s in range(2) for r in range(p)],
                         [mems[r].residual[n] for r in range(p) for n in ("w", "b")])
            continue
        store, res, rings = HashStore(), {}, {}

        def body(r):
            with Ring.from_store(store, r, p, wire=wire, codec=ScaledCodec(10), k=10, chunk=1000,
                                 timeout=20) as ring:
                y = xs[r].copy()
                ring.allreduce(y)
                res[r], rings[r] = y, ring.bytes_sent

        errs = run_ranks(p, body)
        assert not errs, errs
        got[wire] = ([res[r] for r in range(p)], [])
        if wire == "emulate":
            assert sum(rings.values()) == 4 * 9001 * 2 * (p - 1)
    soft, emu = got["software"], got["emulate"]
    assert all(_same_bits(a, b) for a, b in zip(soft[0], emu[0]))
    assert all(_same_bits(a, b) for a, b in zip(soft[1], emu[1]))
    y = emu[0][0]
    assert all(_same_bits(y, o) for o in emu[0][:p])         # the ranks agree
    want = sum(x.astype(np.float64) for x in xs)
    fin = np.isfinite(want)
    assert y[4000] == np.inf and y[4001] == -np.inf and np.isnan(y[4002])   # passed through
    assert np.all(np.isfinite(y[fin]))           # nothing overflowed on the way
    # The large chunk: |error| within the hops' bounds (2^(s-10) per hop, s <= e_max + 10).
    big = slice(2000, 3000)
    assert np.max(np.abs(y[big] - want[big])) <= 2 * p * 2.0 ** -10 * np.abs(want[big]).max()


def test_a_bad_scale_from_the_previous_rank_is_a_clear_error():
    class Link:
        peer = 0

        def __init__(self, msg):
            self.msg = msg

        def recv_msg(self):
            return self.msg

    class Sender:
        error = None

    for msg in (SCALE_MAX + 1, SCALE_MIN - 1, "3", 2.0, True, None):
        ring = Ring(1, 2, {0: Link(msg)}, wire="emulate", codec=ScaledCodec(10), k=10)
        with pytest.raises(CollectiveError, match="as a chunk's scale"):
            ring._recv_scale(Sender())
    ring = Ring(1, 2, {0: Link(-20)}, wire="emulate", codec=ScaledCodec(10), k=10)
    assert ring._recv_scale(Sender()) == -20


@pytest.mark.skipif(__import__("inceptionn.drivers.netns", fromlist=["x"]).netns_available()
                    is not None, reason="no network namespaces (needs root)")
def test_through_the_software_nic_the_scaled_ring_and_its_loss_are_the_software_wires():
    """The NIC path: float32 times 2^-s on tagged sockets through the bridge's engines
    (fixed k), s on the control connection; the sender models its engine's loss with the
    golden codec. Sums and memories equal the software wire's bit for bit, and the
    engines compressed the scaled chunks."""
    from inceptionn.drivers.bridge import Bridge
    rng = np.random.default_rng(4)
    grads = {(r, s): (rng.standard_normal(40_003) * 1e-5).astype(np.float32)
             for r in range(2) for s in range(2)}
    soft, smem, errs = _rings(2, 2, lambda: ScaledCodec(10), lambda r, s: grads[(r, s)],
                              chunk=8192)
    assert not errs, errs
    with Bridge(2, mtu=9000, k=10) as br:
        nic, nmem, errs = _rings(2, 2, lambda: ScaledCodec(10), lambda r, s: grads[(r, s)],
                                 chunk=8192, wire="nic", mss=8948,
                                 host=None, call=lambda r, make: br.call(r, make))
        c = br.counters()
    assert not errs, errs
    for r in range(2):
        for s in range(2):
            assert _same_bits(soft[r][s][1], nic[r][s][1]), (r, s)
        for n in ("w", "b"):
            assert _same_bits(smem[r].residual[n], nmem[r].residual[n]), (r, n)
    assert all(p["tx_compressed"] > 0 and p["misaligned"] == 0 for p in c)
    # All below 2^-10: the absolute bound would send zeros; scaled, the sum arrives.
    assert np.any(nic[0][1][1])


def test_the_owners_encode_keep_records_the_loss_and_keeps_the_decoded_values():
    rec = LossRecorder(ScaledCodec(10))
    x = np.concatenate([np.linspace(-1e-3, 1e-3, 500), [np.inf, np.nan]]).astype(np.float32)
    orig = x.copy()
    rec.start(x)
    body = rec.encode_keep(x[:502])
    loss = rec.stop()
    assert _same_bits(x, ScaledCodec(10).decode(body, 502))
    assert np.all(loss[:500] == orig[:500] - x[:500]) and np.any(loss)
    assert loss[500] == 0 and loss[501] == 0       # inf and NaN: nothing kept


def test_recorder_into_a_reused_buffer_and_memory_updated_in_place():
    """The hook hands the recorder one loss buffer per bucket size, step after step: it
    is zeroed at start, checked, and Memory keeps its residuals in place (the same
    values as fresh arrays)."""
    rec = LossRecorder(WireCodec("bounded", 6))
    x = np.random.default_rng(0).normal(0, 0.1, 64).astype(np.float32)
    loss = np.full(64, 7.0, np.float32)
    rec.start(x, out=loss)
    assert not loss.any()
    rec.encode(x[:32])
    got = rec.stop()
    assert got is loss and loss[:32].any() and not loss[32:].any()
    fresh = LossRecorder(WireCodec("bounded", 6))
    fresh.start(x)
    fresh.encode(x[:32])
    assert np.array_equal(fresh.stop(), got)
    for bad in (np.zeros(63, np.float32), np.zeros(64, np.float64), np.zeros(128, np.float32)[::2]):
        with pytest.raises(ValueError, match="out"):
            rec.start(x, out=bad)
    mem = Memory()
    mem.update([("w", 40), ("b", 24)], got)
    kept = mem.residual["w"]
    mem.update([("w", 40), ("b", 24)], 2 * got)
    assert mem.residual["w"] is kept and np.array_equal(kept, 2 * got[:40])
    mem.update([("w", 30), ("b", 34)], got)           # a new layout: new arrays
    assert mem.residual["w"].size == 30 and np.array_equal(mem.residual["b"], got[30:])


@pytest.mark.parametrize("wire", ["software", "emulate"])
def test_a_chunk_of_several_pieces_codes_as_those_pieces(wire):
    """The ring pipelines in chunks of 2^18 floats and codes (and scales) in pieces of
    2^16 (socket_ring._piece): sums, recorded losses and bytes sent are those of a ring
    whose chunk is the piece, bit for bit. A chunk that is not a multiple of the piece
    is its own piece (one scale): other numbers."""
    from inceptionn.drivers.collectives.transports.socket_ring import PIECE
    p, n = 3, 3 * (4 * PIECE + 12_345) + 2
    rng = np.random.default_rng(5)
    ramp = 2.0 ** (-30 * np.arange(n) / n)       # the scale moves along the buffer
    grads = {(r, s): (rng.standard_normal(n) * ramp).astype(np.float32)
             for r in range(p) for s in range(2)}
    got = {}
    for chunk in (PIECE, 4 * PIECE, 3 * PIECE + 1):
        rings = {}

        def keep(r, make):
            rings[r] = make()
            return rings[r]

        out, mems, errs = _rings(p, 2, lambda: ScaledCodec(10), lambda r, s: grads[(r, s)],
                                 chunk=chunk, wire=wire, call=keep)
        assert not errs, errs
        got[chunk] = ([out[r][s][1] for s in range(2) for r in range(p)],
                      [mems[r].residual[k] for r in range(p) for k in ("w", "b")],
                      [rings[r].bytes_sent for r in range(p)])
    small, big, odd = got[PIECE], got[4 * PIECE], got[3 * PIECE + 1]
    assert all(_same_bits(a, b) for a, b in zip(small[0] + small[1], big[0] + big[1]))
    assert small[2] == big[2]
    assert not all(_same_bits(a, b) for a, b in zip(small[0], odd[0]))


@pytest.mark.parametrize("wire,codec,p", [("software", "scaled", 2), ("software", "scaled", 3),
                                          ("software", "bounded", 3), ("software", "paper", 3),
                                          ("emulate", "scaled", 3)])
def test_the_ring_leaves_the_mean_as_dividing_after_would(wire, codec, p):
    """allreduce(x, divide_by=P) (the DDP hook's): the final values written divided where
    nothing reads them again (P = 2, or forwards of the frames received), divided after
    elsewhere (the paper's codec re-codes its forwards; the float wires): the bits of
    allreduce(x) / P either way, and the same recorded losses."""
    from inceptionn.drivers.collectives.memory import LossRecorder as Rec
    n = 3 * 70_001 + 5
    rng = np.random.default_rng(p)
    xs = [(rng.standard_normal(n) * 2.0 ** (-20 * np.arange(n) / n)).astype(np.float32)
          for _ in range(p)]
    got = {}
    for div in (1, p):
        store, res = HashStore(), {}

        def body(r):
            c = {"scaled": lambda: Rec(ScaledCodec(10)), "bounded": lambda: "bounded",
                 "paper": lambda: "paper"}[codec]()
            with Ring.from_store(store, r, p, wire=wire, codec=c, k=10, chunk=1 << 16,
                                 timeout=20) as ring:
                x = xs[r].copy()
                if isinstance(c, Rec):
                    c.start(x)
                ring.allreduce(x, divide_by=div)
                res[r] = (x, c.stop() if isinstance(c, Rec) else None)

        errs = run_ranks(p, body)
        assert not errs, errs
        got[div] = res
    for r in range(p):
        (plain, loss1), (mean, loss2) = got[1][r], got[p][r]
        assert _same_bits(plain / np.float32(p), mean)
        assert loss1 is None or _same_bits(loss1, loss2)
