"""The engines' lanes (hw/engine_lanes.py) in Amaranth's simulator, at a narrow width with
stand-in engines: the turn, the lanes' FIFOs and adapters, the per-frame configuration
queue, the order FIFO and the in-order merge, in seconds (make test). The lanes with the
real engines at 512 bits run on Verilator under make sim-stress (sim/test_engine_lanes.py:
their builds are minutes each).

The stand-in engine forwards a frame's beats and writes the ``dscp`` it saw on the
frame's first beat into the frame's first byte, so the output shows which configuration
each lane's engine had when it took each frame; like the real engines it spends clocks
between frames (GAP). The bypass lane's test here is a stand-in too (a frame whose
``dscp`` is odd is "surely forwarded"), so that the bypass lane's order, counters and
rate are checked at the narrow width, and TX's bypass lane drops frames longer than the
engine keeps (a few beats here); the real tests (hw/lane_bypass.py) are checked against
golden on the frames of the engines' testbenches at 512 bits."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from inceptionn.hw.axis import axis_signature, beat_layout
from inceptionn.hw.compression_engine import CompressionEngine
from inceptionn.hw.decompression_engine import DecompressionEngine
from inceptionn.hw.engine_lanes import EngineLanes, wide_engine
from inceptionn.hw.primitives import StreamFifo

LANE, BEAT = 16, 32          # bits: two lanes of 2 bytes under a 4-byte beat
GAP = 6                      # the stand-in engine's idle clocks after each frame


class StandIn(wiring.Component):
    """An engine's configuration and counter ports (RX's by default), LANE-bit streams;
    beats forwarded
    through a 4-entry FIFO, the first byte of a frame replaced by the ``dscp`` seen as
    that byte leaves the FIFO, and the frame counted in ``frames_in`` as its last beat
    leaves it: like the RX engine, which samples its configuration and counts a frame
    behind its input slice, possibly after the frame's last beat went in."""

    def __init__(self, engine_cls=DecompressionEngine):
        super().__init__({**{n: mb for n, mb in engine_cls.__annotations__.items()
                             if isinstance(mb, wiring.Member) and n not in ("i", "o")},
                          "i": In(axis_signature(LANE)), "o": Out(axis_signature(LANE))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = StreamFifo(beat_layout(LANE), 4, fast=True)
        first = Signal(init=1)
        wait = Signal(range(GAP + 1))
        with m.If(wait):
            m.d.sync += wait.eq(wait - 1)
        with m.If(self.i.valid & self.i.ready & self.i.payload.last):
            m.d.sync += wait.eq(GAP)
        m.d.comb += [
            q.i.payload.eq(self.i.payload),
            q.i.valid.eq(self.i.valid & (wait == 0)), self.i.ready.eq(q.i.ready & (wait == 0)),
        ]
        wiring.connect(m, q.o, wiring.flipped(self.o))
        with m.If(first):
            m.d.comb += self.o.payload.data[:8].eq(self.dscp)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += first.eq(self.o.payload.last)
            with m.If(self.o.payload.last):
                m.d.sync += [self.frames_in.eq(self.frames_in + 1),
                             self.frames_out.eq(self.frames_out + 1)]
        return m


def _odd_dscp(data, cfg):
    return cfg.dscp[0]


TX_MAX = 16          # bytes: TX's lanes at the narrow width drop longer frames


def _lanes(bypass=None, until_counted=True, tx=False):
    if tx:            # TX: drops, samples the configuration with the first beat in
        return EngineLanes(None, CompressionEngine, BEAT, drops=True, bypass=bypass,
                           fifo_depth=8, order_depth=8, cfg_depth=4, lane_bits=LANE,
                           engine=lambda: StandIn(CompressionEngine), max_frame_bytes=TX_MAX)
    return EngineLanes(None, DecompressionEngine, BEAT, drops=False, bypass=bypass,
                       until_counted=until_counted, fifo_depth=8, order_depth=8, cfg_depth=4,
                       engine=StandIn, lane_bits=LANE)


def _beats(frame):
    nb = BEAT // 8
    out = []
    for off in range(0, len(frame), nb):
        chunk = frame[off:off + nb]
        out.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                    off + nb >= len(frame)))
    return out


def _run(frames, seed, bypass=None, idle=0.3, ready=0.7, tx=False, want=None):
    """Frames [(bytes, dscp)] in with random idle and backpressure; frames out, the DUT,
    the clock of each output beat. ``want``: the frames expected out (all by default)."""
    dut = _lanes(bypass, tx=tx)
    want = len(frames) if want is None else want
    names = ("frames_in", "frames_out", "bypassed") + (("dropped",) if tx else ())
    rng = random.Random(seed)
    got, cur, clocks = [], bytearray(), []

    async def bench(ctx):
        for frame, dscp in frames:
            for data, keep, last in _beats(frame):
                while rng.random() < idle:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                ctx.set(dut.i.payload.data, data)
                ctx.set(dut.i.payload.keep, keep)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.dscp, dscp)          # changes while other frames are inside
                ctx.set(dut.i.valid, 1)
                await ctx.tick().until(dut.i.ready)
            ctx.set(dut.dscp, rng.randrange(64))
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        clock = 0
        while len(got) < want:
            rdy = rng.random() < ready
            ctx.set(dut.o.ready, rdy)
            take = rdy and ctx.get(dut.o.valid)
            p = ctx.get(dut.o.payload)
            await ctx.tick()
            clock += 1
            if take:
                clocks.append(clock)
                n = bin(p.keep).count("1")
                cur.extend(p.data.to_bytes(BEAT // 8, "little")[:n])
                if p.last:
                    got.append(bytes(cur))
                    cur.clear()
        await ctx.tick().repeat(3)              # the counter sums are registered
        await ctx.tick().repeat(40)             # nothing more comes out
        assert not ctx.get(dut.o.valid), "a frame more than expected"
        dut.counts = {n: ctx.get(getattr(dut, n)) for n in names}

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(sink)
    sim.run()
    return got, dut, clocks


@pytest.mark.parametrize("seed", [1, 2])
def test_lanes_keep_order_boundaries_and_per_frame_configuration(seed):
    rng = random.Random(seed)
    frames = [(bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 3, 4, 5, 9, 17, 40]))),
               rng.randrange(64)) for _ in range(40)]
    got, _, _ = _run(frames, seed)
    want = [bytes([dscp]) + f[1:] for f, dscp in frames]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i}: {g.hex()} != {w.hex()}"


def _mixed(seed, n=40):
    rng = random.Random(seed)
    return [(bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 3, 4, 5, 9, 17, 40]))),
             rng.randrange(64)) for _ in range(n)]


@pytest.mark.parametrize("seed", [3, 4])
def test_bypass_lane_keeps_order_configuration_and_counters(seed):
    """Frames the test sends to the bypass lane (odd dscp, sampled with their first
    beat) come out unchanged, the others through an engine lane, all in order; the
    counters count both."""
    frames = _mixed(seed)
    got, dut, _ = _run(frames, seed, bypass=_odd_dscp)
    want = [f if dscp & 1 else bytes([dscp]) + f[1:] for f, dscp in frames]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i}: {g.hex()} != {w.hex()}"
    n_byp = sum(dscp & 1 for _, dscp in frames)
    assert 5 < n_byp < len(frames) - 5
    counts = {n: dut.counts[n] for n in ("frames_in", "frames_out", "bypassed")}
    assert counts == {"frames_in": len(frames), "frames_out": len(frames), "bypassed": n_byp}


def _burst_clocks(bypass, dscp):
    """Clocks from the first output beat to the last of 12 back-to-back 3-beat frames
    (source never idle, sink always ready)."""
    frames = [(bytes(range(12)), dscp)] * 12
    got, _, clocks = _run(frames, 0, bypass=bypass, idle=0, ready=1.1)
    assert len(got) == len(frames)
    return clocks[-1] - clocks[0] + 1, 3 * len(frames)


def test_bypassed_burst_leaves_at_a_beat_a_clock():
    """A burst the test sends to the bypass lane leaves at one beat a clock (clocks
    counted in the simulation); through the stand-in engines (GAP clocks a frame) the
    same burst takes longer, as it did before the bypass lane."""
    clocks, beats = _burst_clocks(_odd_dscp, 11)
    assert clocks == beats, f"{beats} bypassed beats took {clocks} clocks"
    for bypass, dscp in ((_odd_dscp, 10), (None, 11)):
        clocks, beats = _burst_clocks(bypass, dscp)
        assert clocks > beats, f"{beats} beats through the engine lanes in {clocks} clocks"


@pytest.mark.parametrize("seed", [5, 6])
def test_tx_bypass_lane_drops_frames_longer_than_the_engine_keeps(seed):
    """TX's bypass lane drops a frame longer than the engine keeps (TX_MAX bytes here) as
    the engine would, whole, even one longer than the bypass FIFO (8 beats): counted in
    dropped, not bypassed; every other frame comes out in order. Long frames go to the
    bypass lane only (odd dscp): the stand-in engine drops none."""
    rng = random.Random(seed)
    frames = []
    for _ in range(40):
        dscp = rng.randrange(64)
        n = rng.choice([1, 3, 5, 9, 15, 16] + ([17, 20, 33, 100] if dscp & 1 else []))
        frames.append((bytes(rng.randrange(256) for _ in range(n)), dscp))
    kept = [(f, d) for f, d in frames if len(f) <= TX_MAX]
    got, dut, _ = _run(frames, seed, bypass=_odd_dscp, tx=True, want=len(kept))
    assert got == [f if d & 1 else bytes([d]) + f[1:] for f, d in kept]
    n_long = len(frames) - len(kept)
    assert n_long > 3 and any(len(f) > 8 * BEAT // 8 for f, _ in frames)
    assert dut.counts == {"frames_in": len(frames), "frames_out": len(kept),
                          "bypassed": sum(d & 1 for _, d in kept), "dropped": n_long}


def test_lanes_refuse_widths_they_cannot_split():
    for bits in (384, 256):
        with pytest.raises(ValueError, match="lanes need"):
            EngineLanes(None, DecompressionEngine, bits, drops=False)


def test_the_256_bit_engine_is_itself():
    for bits, name in ((256, "DecompressionEngine"), (512, "DecompressionEngineLanes")):
        eng = wide_engine("rx", bits)
        eng._MustUse__silence = True          # built to be looked at, not elaborated
        assert type(eng).__name__ == name
