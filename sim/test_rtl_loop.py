"""The compiled engine loop (inceptionn/rtl/rtl_loop.py): bit-exact against golden, and the same
clock counts as the cocotb path on the same frames."""

import pytest

from inceptionn import golden
from inceptionn.sim import engines
from inceptionn.rtl import frame_builders as F
from inceptionn.rtl.rtl_loop import FastEngine, run_frames


def _oversize():
    # A frame longer than the TX engine takes: it is dropped and counted.
    return F.udp_frame(bytes(golden.MAX_FRAME_BYTES - 41))


@pytest.mark.parametrize("k, codec", [(6, "paper"), (10, "paper"), (10, "bounded"), (16, "bounded")])
def test_tx_then_rx_match_golden_across_batches(k, codec):
    """The TX loop's codec argument (the software NIC's --codec) in both wire versions."""
    frames = F.mixed_frames(seed=k, count=300) + [(_oversize(), False)]
    tx_c, rx_c = golden.Counters(), golden.Counters()
    want_wire = [golden.tx_frame(f, k=k, tuser=u, counters=tx_c, codec=codec) for f, u in frames]
    with FastEngine("tx", k=k, codec=codec) as tx, FastEngine("rx") as rx:
        # Two batches on one engine: state and counters carry over.
        got = tx.run(frames[:120]) + tx.run(frames[120:])
        assert [g and g[0] for g in got] == want_wire
        assert got[-1] is None and tx.counters()["dropped"] == 1
        assert tx.counters() == {n: v for n, v in tx_c.as_dict().items() if n in tx.counters()}
        wire = [g for g in got if g is not None]
        want_host = [golden.rx_frame(f, tuser=u, counters=rx_c) for f, u in wire]
        host = rx.run(wire)
        assert host == [(f, bool(b)) for f, b in want_host]
        assert rx.counters() == {n: v for n, v in rx_c.as_dict().items() if n in rx.counters()}
        assert all(lat > 0 for lat in tx.last.latencies + rx.last.latencies)
        assert tx.counters()["version2" if codec == "bounded" else "version1"] > 100


@pytest.mark.parametrize("kind, codec", [("tx", "paper"), ("rx", "bounded")])
def test_clock_counts_equal_the_cocotb_path(kind, codec):
    frames = [f for f, _ in F.mixed_frames(seed=7, count=40)]
    if kind == "rx":
        frames = [w for w in (golden.tx_frame(f, codec=codec) for f in frames) if w is not None]
    fast = run_frames(kind, frames, codec=codec)
    slow = engines.run_frames(kind, frames, codec=codec, tag=f"rtl_loop_{kind}")
    assert fast.frames_out == slow.frames_out
    assert (fast.cycles, fast.in_cycles, fast.in_beats, fast.out_beats) == \
           (slow.cycles, slow.in_cycles, slow.in_beats, slow.out_beats)
    assert fast.latencies == slow.latencies
    assert fast.counters == slow.counters


def test_bad_arguments_and_closed_engine():
    with pytest.raises(ValueError, match="dscp"):
        FastEngine("tx", dscp=64)
    with pytest.raises(ValueError, match="kind"):
        FastEngine("loopback")
    with pytest.raises(ValueError, match="codec"):
        FastEngine("tx", codec="fast")
    eng = FastEngine("rx")
    with pytest.raises(ValueError, match="at least one byte"):
        eng.run([b""])
    eng.close()
    with pytest.raises(RuntimeError, match="closed"):
        eng.run([F.arp_frame()])
