"""The engines at 512 bits a beat (hw/engine_lanes.py: two lanes of each 256-bit engine)
against golden, byte for byte, tkeep, tuser, order and counters included.

One cocotb module for both: the DUT is the TX lanes when it has a ``k`` port, else the RX
lanes. The frames, configurations and golden checks are the 256-bit testbenches' own
(sim/test_compression_engine.py, sim/test_decompression_engine.py), so the two widths
are held to one set of cases:

- protocol matrix: cocotbext-axi's source and sink on the 512-bit buses, every idle x
  backpressure pair, the wire versions taking turns (TX) or mixed frame by frame (RX);
- TX: the corner frames (dropped oversize frames, bad-flagged frames, fall-back, VLAN,
  options) with the codec, version and k changing frame by frame, so that each lane's
  engine must see the configuration its frame came in with;
- RX: the malformed and cut-short compressed frames of every version (flagged bad), then
  correct ones, under random idle and backpressure;
- the bypass lanes: bypassed and coded frames mixed (TX: the stress mix and the corner
  frames, dropped ones included, with enable, DSCP, k, codec and version changing frame
  by frame; RX: the host frames' TX outputs with enable, DSCP and the accepted versions
  changing), the bypass test and the engines each using the frame's own configuration,
  under random idle and backpressure, counters included;
- line rate (under `make sim-stress`): back-to-back 1514- and 9014-byte compressible
  frames, sink always ready, one 512-bit beat a clock in at steady state (a count of
  clocks in the simulation, not a timed assert); bypassed ones (DSCP 0) of 64, 1514
  and 9014 bytes, one beat a clock in (TX) or out (RX), exactly; TX: 64-byte frames it
  compresses or sends as a fall-back (the short-frame engine), one beat a clock in.

All of it runs under `make sim-stress`, not `make test`: each 512-bit model holds two
engines and its Verilator build took about 6 minutes on the 2 shared cores (more than
the whole of make test's room); make test checks the lanes' own logic with stand-in
engines in Amaranth's simulator (tests/test_engine_lanes.py) and the engines themselves
at 256 bits.
"""

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from inceptionn.rtl import harness
from inceptionn.rtl.designs import DESIGNS, rx512_design, tx512_design
from inceptionn.sim import test_compression_engine as T
from inceptionn.sim import test_decompression_engine as R
from inceptionn.sim.axis import PAUSE_MODES, pause_generator, stress
from inceptionn.sim.tb_engine_run import play

BEAT = 64


def _is_tx(dut):
    return hasattr(dut, "k")


async def _axi_run(dut, frames, idle, backpressure):
    """cocotbext-axi at the DUT's width: send every frame, receive as many."""
    from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    assert len(src.bus.tdata) == 8 * BEAT
    src.set_pause_generator(pause_generator(idle, 1))
    sink.set_pause_generator(pause_generator(backpressure, 2))
    for f, u in frames:
        await src.send(AxiStreamFrame(f, tuser=int(u)))
    return sink


async def _recv(sink, n):
    got = []
    for _ in range(n):
        rx = await sink.recv()
        user = rx.tuser[-1] if isinstance(rx.tuser, list) else rx.tuser
        got.append((bytes(rx.tdata), bool(user)))
    return got


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def protocol_matrix(dut, idle, backpressure):
    if _is_tx(dut):
        variant = T.VARIANTS[(PAUSE_MODES.index(idle) + PAUSE_MODES.index(backpressure)) % 3]
        await T.start(dut, **variant)
        frames = T.matrix_frames()
        sink = await _axi_run(dut, frames, idle, backpressure)
        got = await _recv(sink, T.n_out(frames, **variant))
        await ClockCycles(dut.clk, 20)
        assert sink.empty()
        T.check(dut, frames, got, **variant)
    else:
        await R._reset(dut)
        wire = R._wire(R._originals(3)[::3], tuser_rate=0.1, seed=4)
        exp, c = R._expect(wire)
        assert c.version1 > 5 and c.version2 > 5 and c.version3 > 5
        sink = await _axi_run(dut, wire, idle, backpressure)
        got = await _recv(sink, len(wire))
        R._compare(got, exp)
        await ClockCycles(dut.clk, 4)      # the lanes' counter sums are registered
        R._check_counters(dut, c)


@cocotb.test()
@cocotb.parametrize(mode=["none", "cyclic", "random"])
async def corners(dut, mode):
    if _is_tx(dut):
        # Dropped (over MAX_FRAME_BYTES), bad-flagged, fall-back and compressed frames,
        # each with its own codec, version and k.
        await T.start(dut)
        frames = T.corner_frames()
        cfgs = T.mixed_cfgs(len(frames), seed=len(mode))
        res = await play(dut, frames, idle=mode, backpressure=mode, seed=9,
                         expect=T.n_out(frames, cfgs), cfgs=cfgs)
        await ClockCycles(dut.clk, 2)
        c = T.check(dut, frames, res["frames_out"], cfgs)
        assert c.dropped == 3 and c.fallback >= 3 and c.compressed >= 10
        assert c.version1 >= 3 and c.version2 >= 3 and c.version3 >= 3
    else:
        # Cut-short and malformed compressed frames of every version: flagged bad.
        await R._reset(dut)
        cases = R._malformed(50)[::2]
        wire = [(f, u) for f, u, _ in cases]
        exp, c = R._expect(wire)
        res = await play(dut, wire, idle=mode, backpressure=mode, seed=51)
        R._compare(res["frames_out"], exp)
        assert sum(eu and not u for (_, eu), (_, u) in zip(exp, wire)) > 20
        await ClockCycles(dut.clk, 4)
        R._check_counters(dut, c)


@cocotb.test()
@cocotb.parametrize(size=[1514, 9014])
async def line_rate(dut, size):
    """Back-to-back compressible frames (TX) or their compressed forms (RX), sink always
    ready: TX takes one 512-bit beat a clock at steady state; RX gives at least 0.95."""
    from inceptionn.rtl import frame_builders as F
    vals, _ = F.gradient_values((size - 42) // 4 * 12, seed=3, demo_dir=None)
    n = (size - 42) // 4
    frames = [(F.udp_frame(F.float_payload(vals[i * n:(i + 1) * n])), False) for i in range(12)]
    if _is_tx(dut):
        await T.start(dut)
        res = await play(dut, frames)
        T.check(dut, frames, res["frames_out"])
        spans = res["in_last_cycle"]
        beats = sum(-(-len(f) // BEAT) for f, _ in frames[2:11])
        assert spans[10] - spans[1] == beats, f"{beats} beats took {spans[10] - spans[1]} cycles"
    else:
        await R._reset(dut)
        wire = [(R.tx_frame(f), False) for f, _ in frames]
        exp, _ = R._expect(wire)
        res = await play(dut, wire)
        R._compare(res["frames_out"], exp)
        outs = res["out_first_cycle"]
        beats = sum(-(-len(e) // BEAT) for e, _ in exp[2:11])
        assert beats >= 0.95 * (outs[11] - outs[2]), f"{beats} beats in {outs[11] - outs[2]} cycles"
    await RisingEdge(dut.clk)


@cocotb.test()
@cocotb.parametrize(kind=["coded", "fallback"])
async def line_rate_short(dut, kind):
    """TX: back-to-back 64-byte frames that the engine compresses or sends as a
    fall-back (the short-frame engine, hw/short_frame.py), sink always ready: one
    512-bit beat a clock in, exactly."""
    if not _is_tx(dut):
        return
    from inceptionn.rtl import frame_builders as F
    if kind == "coded":
        vals, _ = F.gradient_values(6 * 24, seed=5, demo_dir=None)
        pays = [F.float_payload(vals[6 * i:6 * i + 6])[:22] for i in range(24)]
    else:
        pays = [F.incompressible_payload(22, i) for i in range(24)]
    wire = [(F.udp_frame(p), False) for p in pays]
    assert all(len(f) == BEAT for f, _ in wire)
    await T.start(dut)
    res = await play(dut, wire)
    c = T.check(dut, wire, res["frames_out"])
    assert (c.compressed if kind == "coded" else c.fallback) == len(wire)
    spans = res["in_last_cycle"]
    assert spans[22] - spans[2] == 20, f"20 frames took {spans[22] - spans[2]} cycles"
    await RisingEdge(dut.clk)


@cocotb.test()
async def bypass_mixed(dut):
    """Bypassed and coded frames mixed, the configuration changing frame by frame (TX:
    enable, DSCP, k, codec and version; RX: enable, DSCP and the accepted versions), so
    that the bypass test and the engines must each use the frame's own; TX's include
    frames longer than the engine keeps, which its bypass lane drops too."""
    import random

    from inceptionn.golden import Counters
    from inceptionn.golden.decompression_engine import versions_mask
    if _is_tx(dut):
        from inceptionn.rtl import frame_builders as F
        await T.start(dut)
        rng = random.Random(12)
        frames = F.mixed_frames(13, 150) + T.corner_frames()
        cfgs = []
        for _ in frames:
            v = dict(rng.choice(T.VARIANTS))
            v.setdefault("version", 3)
            cfgs.append({**v, "enable": int(rng.random() < 0.85),
                         "dscp": rng.choice([10, 10, 10, 0, 11]), "k": rng.choice([10, 10, 6, 0])})
        want, c = T.expected(frames, cfgs)
        assert c.compressed > 40 and c.bypassed > 60 and c.dropped >= 3 and c.fallback > 0
        res = await play(dut, frames, idle="random", backpressure="random", seed=14,
                         expect=len(want), cfgs=cfgs)
        await ClockCycles(dut.clk, 4)      # the lanes' counter sums are registered
        T.check(dut, frames, res["frames_out"], cfgs)
        return
    await R._reset(dut)
    rng = random.Random(12)
    wire = R._wire(R._originals(5), tuser_rate=0.1, seed=13)
    cfgs, exp, c = [], [], Counters()
    for f, u in wire:
        enable, dscp = rng.random() < 0.85, rng.choice([10, 10, 10, 0, 11])
        versions = rng.choice([(1, 2, 3), (1, 2, 3), (3,), ()])
        cfgs.append({"enable": int(enable), "dscp": dscp, "versions": versions_mask(versions)})
        exp.append(R.rx_frame(f, dscp=dscp, enable=enable, tuser=u, versions=versions,
                              counters=c))
    assert c.decompressed > 25 and c.bypassed > 90
    res = await play(dut, wire, idle="random", backpressure="random", seed=14, cfgs=cfgs)
    R._compare(res["frames_out"], exp)
    await ClockCycles(dut.clk, 4)
    R._check_counters(dut, c)


@cocotb.test()
@cocotb.parametrize(size=[64, 1514, 9014])
async def line_rate_bypassed(dut, size):
    """Back-to-back frames of another DSCP: TX takes one 512-bit beat a clock, RX gives
    one, exactly."""
    from inceptionn.rtl import frame_builders as F
    wire = [(F.udp_frame(bytes(range(256)) * ((size - 42) // 256) + bytes((size - 42) % 256),
                         tos=0), False) for _ in range(12)]
    assert all(len(f) == size for f, _ in wire)
    if _is_tx(dut):
        await T.start(dut)
        res = await play(dut, wire)
        c = T.check(dut, wire, res["frames_out"])
        assert c.bypassed == len(wire)
        spans = res["in_last_cycle"]
        beats = sum(-(-len(f) // BEAT) for f, _ in wire[2:11])
        assert spans[10] - spans[1] == beats, f"{beats} beats took {spans[10] - spans[1]} cycles"
        await RisingEdge(dut.clk)
        return
    await R._reset(dut)
    exp, c = R._expect(wire)
    assert c.bypassed == len(wire)
    res = await play(dut, wire)
    R._compare(res["frames_out"], exp)
    outs = res["out_first_cycle"]
    beats = sum(-(-len(e) // BEAT) for e, _ in exp[2:11])
    assert beats == outs[11] - outs[2], f"{beats} beats in {outs[11] - outs[2]} cycles"
    await RisingEdge(dut.clk)


def _run(kind, cases, tag):
    if not stress():
        pytest.skip("the 512-bit engines' builds take minutes: make sim-stress")
    design = {"tx512": tx512_design, "rx512": rx512_design}[kind]
    assert harness.run(design, DESIGNS[kind][0], "inceptionn.sim.test_engine_lanes",
                       testcase=cases, tag=tag) == len(cases)


def _cases():
    return ([f"protocol_matrix/idle={i}/backpressure={b}" for i in PAUSE_MODES for b in PAUSE_MODES]
            + [f"corners/mode={m}" for m in ("none", "cyclic", "random")]
            + [f"line_rate/size={s}" for s in (1514, 9014)])


def _bypass_cases():
    return ["bypass_mixed"] + [f"line_rate_bypassed/size={s}" for s in (64, 1514, 9014)]


def test_tx_lanes_512():
    _run("tx512", _cases() + _bypass_cases()
         + [f"line_rate_short/kind={k}" for k in ("coded", "fallback")], "tx")


def test_rx_lanes_512():
    _run("rx512", _cases() + _bypass_cases(), "rx")
