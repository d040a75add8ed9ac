"""The engines' lanes (hw/engine_lanes.py) in Amaranth's simulator, at a narrow width with
stand-in engines: the turn, the lanes' FIFOs and adapters, the per-frame configuration
queue, the order FIFO and the in-order merge, in seconds (make test). The lanes with the
real engines at 512 bits run on Verilator under make sim-stress (sim/test_engine_lanes.py:
their builds are minutes each).

The stand-in engine forwards a frame's beats and writes the ``dscp`` it saw on the
frame's first beat into the frame's first byte, so the output shows which configuration
each lane's engine had when it took each frame."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from inceptionn.hw.axis import axis_signature, beat_layout
from inceptionn.hw.decompression_engine import DecompressionEngine
from inceptionn.hw.engine_lanes import EngineLanes, wide_engine
from inceptionn.hw.primitives import StreamFifo

LANE, BEAT = 16, 32          # bits: two lanes of 2 bytes under a 4-byte beat


class StandIn(wiring.Component):
    """The RX engine's configuration and counter ports, LANE-bit streams; beats forwarded,
    the first byte of a frame replaced by the ``dscp`` seen with its first beat."""

    def __init__(self):
        super().__init__({**{n: mb for n, mb in DecompressionEngine.__annotations__.items()
                             if isinstance(mb, wiring.Member) and n not in ("i", "o")},
                          "i": In(axis_signature(LANE)), "o": Out(axis_signature(LANE))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = StreamFifo(beat_layout(LANE), 4, fast=True)
        first = Signal(init=1)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += first.eq(self.i.payload.last)
        m.d.comb += [
            q.i.payload.eq(self.i.payload),
            q.i.valid.eq(self.i.valid), self.i.ready.eq(q.i.ready),
        ]
        with m.If(first):
            m.d.comb += q.i.payload.data[:8].eq(self.dscp)
        with m.If(self.i.valid & self.i.ready & first):
            m.d.sync += self.frames_in.eq(self.frames_in + 1)
        wiring.connect(m, q.o, wiring.flipped(self.o))
        return m


def _lanes():
    return EngineLanes(None, DecompressionEngine, BEAT, drops=False, fifo_depth=8,
                       order_depth=8, cfg_depth=4, engine=StandIn, lane_bits=LANE)


def _beats(frame):
    nb = BEAT // 8
    out = []
    for off in range(0, len(frame), nb):
        chunk = frame[off:off + nb]
        out.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                    off + nb >= len(frame)))
    return out


def _run(frames, seed):
    """Frames [(bytes, dscp)] in with random idle and backpressure; frames out."""
    dut = _lanes()
    rng = random.Random(seed)
    got, cur = [], bytearray()

    async def bench(ctx):
        for frame, dscp in frames:
            for data, keep, last in _beats(frame):
                while rng.random() < 0.3:
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
        while len(got) < len(frames):
            ready = rng.random() < 0.7
            ctx.set(dut.o.ready, ready)
            take = ready and ctx.get(dut.o.valid)
            p = ctx.get(dut.o.payload)
            await ctx.tick()
            if take:
                n = bin(p.keep).count("1")
                cur.extend(p.data.to_bytes(BEAT // 8, "little")[:n])
                if p.last:
                    got.append(bytes(cur))
                    cur.clear()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(sink)
    sim.run()
    return got, dut


@pytest.mark.parametrize("seed", [1, 2])
def test_lanes_keep_order_boundaries_and_per_frame_configuration(seed):
    rng = random.Random(seed)
    frames = [(bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 3, 4, 5, 9, 17, 40]))),
               rng.randrange(64)) for _ in range(40)]
    got, _ = _run(frames, seed)
    want = [bytes([dscp]) + f[1:] for f, dscp in frames]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i}: {g.hex()} != {w.hex()}"


def test_lanes_refuse_widths_they_cannot_split():
    for bits in (384, 256):
        with pytest.raises(ValueError, match="lanes need"):
            EngineLanes(None, DecompressionEngine, bits, drops=False)


def test_the_256_bit_engine_is_itself():
    for bits, name in ((256, "DecompressionEngine"), (512, "DecompressionEngineLanes")):
        eng = wide_engine("rx", bits)
        eng._MustUse__silence = True          # built to be looked at, not elaborated
        assert type(eng).__name__ == name
