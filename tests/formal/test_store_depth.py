"""``CompressionEngine(store_depth=...)`` drives every ring pointer width it implies, and
rejects depths it cannot run with.

- elaboration: the pointer fields of every per-frame record (front result, comp region,
  descriptor) are ``log2(store_depth) + 1`` bits at 512, 1024, 2048 and 4096 beats;
  an unsupported depth is refused with a message that says why;
- simulation (Amaranth's simulator, against the golden model byte for byte) at 512
  beats in make test, at 512 and 2048 beats under make formal with enough frames that
  both rings wrap around;
- proof: the egress stage's k-induction (outq never written full, counts) at the
  address widths of both depths (test_formal_tx_stages.py runs it at the default).
"""

import numpy as np
import pytest
from amaranth.hdl import Fragment, Shape
from amaranth.sim import Simulator

from inceptionn.rtl import rtl_golden
from inceptionn.hw.compression_engine import CompressionEngine
from inceptionn.rtl import frame_builders as F
from stream_props import SLOW, run
from test_formal_tx_stages import EgressCheck

POINTERS = {"frontq": ("orig_start",), "compq": ("start", "next"),
            "descq": ("orig_start", "orig_next", "comp_start", "comp_next")}


@pytest.mark.parametrize("depth", [512, 1024, 2048, 4096])
def test_pointer_widths_follow_store_depth(depth):
    eng = CompressionEngine(store_depth=depth)
    Fragment.get(eng, None)
    aw = depth.bit_length() - 1
    for fifo, fields in POINTERS.items():
        layout = eng.pipeline.fifos[fifo].shape
        for f in fields:
            assert Shape.cast(layout.members[f]).width == aw + 1, (depth, fifo, f)
    assert eng.pipeline.stages["orig"].addr_width == aw


@pytest.mark.parametrize("bad", [0, 256, 300, 1000, 1536, -1024, 1024.0])
def test_unsupported_store_depth_refused(bad):
    with pytest.raises(ValueError, match="store_depth must be a power of two"):
        CompressionEngine(store_depth=bad)


@pytest.mark.solver
@pytest.mark.parametrize("aw", [9, 11])
def test_egress_proof_at_other_depths(aw):
    run(EgressCheck(aw=aw), f"tx_egress_prove_aw{aw}", mode="prove", depth=6, script=[])


def _beats(frame):
    out = []
    for off in range(0, len(frame), 32):
        chunk = frame[off:off + 32]
        out.append((int.from_bytes(chunk.ljust(32, b"\0"), "little"),
                    (1 << len(chunk)) - 1, off + 32 >= len(frame)))
    return out


def _simulate(depth, frames):
    dut = CompressionEngine(store_depth=depth)
    sim = Simulator(dut)
    sim.add_clock(4e-9)
    got = []

    async def source(ctx):
        for frame in frames:
            for data, keep, last in _beats(frame):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload.data, data)
                ctx.set(dut.i.payload.keep, keep)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.i.payload.user, 0)
                await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        ctx.set(dut.o.ready, 1)
        cur = b""
        idle = 0
        while len(got) < len(frames) and idle < 2000:
            await ctx.tick()
            if ctx.get(dut.o.valid):
                idle = 0
                keep = ctx.get(dut.o.payload.keep)
                n = bin(keep).count("1")
                cur += ctx.get(dut.o.payload.data).to_bytes(32, "little")[:n]
                if ctx.get(dut.o.payload.last):
                    got.append(cur)
                    cur = b""
            else:
                idle += 1

    sim.add_testbench(source, background=True)
    sim.add_testbench(sink)
    sim.run()
    return got


# make test: the default depth (512); make formal: 2048 as well (elaborated at every
# depth by test_pointer_widths_follow_store_depth in make test).
@pytest.mark.long
@pytest.mark.parametrize("depth", [512, 2048] if SLOW else [512])
def test_store_depth_simulated_against_golden(depth):
    rng = np.random.default_rng(depth)
    # make formal: past the ring's end (each frame is 72 beats), so that the pointers'
    # wrap bit is used; make test: 2 frames.
    n_frames = depth // 72 + 2 if SLOW else 2
    frames = [F.udp_frame(np.asarray(rng.normal(0, 1e-3, 560), "<f4").tobytes())
              for _ in range(n_frames)]
    got = _simulate(depth, frames)
    want = [rtl_golden.tx_frame(f) for f in frames]   # the RTL writes wire version 2
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i} differs from the golden model"
