"""Board self-test: the frame generator and its on-chip reference against the golden
model, then the whole self-test (generator -> TX -> RX -> checker) until it shows pass,
and with a fault injected between TX and RX until it shows fail.

Without the engines in hw/ the self-test runs its own chain (generator -> wire ->
checker, every frame expected back unchanged); with them, the real TX -> RX loop."""

import os
import struct

import pytest

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from inceptionn.rtl import harness, rtl_golden
from inceptionn.sim.axis import Clock, Streams, beats_to_frame, pause_generator, port_sink

PROBE = "selftest_gen_probe"


def _probe():
    from amaranth import Module
    from amaranth.lib import stream, wiring
    from amaranth.lib.wiring import In, Out
    from inceptionn.hw.selftest_gen import FrameGenerator, GenBeat, ReferenceGenerator

    class GenProbe(wiring.Component):
        gen: Out(stream.Signature(GenBeat))
        ref: Out(stream.Signature(GenBeat))
        v2: In(1)

        def elaborate(self, platform):
            m = Module()
            m.submodules.g = g = FrameGenerator()
            m.submodules.r = r = ReferenceGenerator()
            m.d.comb += r.v2.eq(self.v2)
            wiring.connect(m, g.o, wiring.flipped(self.gen))
            wiring.connect(m, r.o, wiring.flipped(self.ref))
            return m
    return GenProbe()


def _field(layout, name):
    f = layout[name]
    return f.offset, f.width


async def _reset(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0


async def _collect(dut, prefix, count, pause):
    """Frames from a GenBeat stream: [(frame bytes, dec frame bytes, kind, length, csize)]."""
    from inceptionn.hw.selftest_gen import GenBeat
    f = {n: _field(GenBeat, n) for n in ("data", "dec", "keep", "last", "kind", "length", "csize")}
    frames, beats, decs = [], [], []

    def beat(v):
        get = {n: (v >> o) & ((1 << w) - 1) for n, (o, w) in f.items()}
        beats.append((get["data"], get["keep"]))
        decs.append((get["dec"], get["keep"]))
        if get["last"]:
            frames.append((beats_to_frame(beats), beats_to_frame(decs), get["kind"],
                           get["length"], get["csize"]))
            beats.clear()
            decs.clear()
    sink = port_sink(dut, prefix, pause=pause, on_item=beat)
    await Streams(dut.clk, sink).run_until(lambda: len(frames) >= count, 1_000_000,
                                           lambda: f"{prefix}: {len(frames)} of {count} frames")
    sink.ready.value = 0
    return frames


@cocotb.test()
@cocotb.parametrize(codec=("paper", "bounded"))
async def generator_matches_golden(dut, codec):
    """The reference decodes as the TX engine's codec (wire format version 1 or 2)."""
    from inceptionn import golden
    from inceptionn.hw.selftest_gen import KIND_DENSE, KIND_OTHER_DSCP, KIND_TCP
    dut.v2.value = int(codec == "bounded")
    await _reset(dut)
    n = int(os.environ.get("FRAMES", "48"))
    gen_task = cocotb.start_soon(_collect(dut, "gen", n, pause_generator("random", 11)))
    ref = await _collect(dut, "ref", n, pause_generator("cyclic"))
    gen = await gen_task
    kinds = set()
    for i, ((frame, gdec, kind, length, _), (rframe, rdec, rkind, rlength, csize)) in enumerate(zip(gen, ref)):
        kinds.add(kind)
        assert gdec == frame, f"frame {i}: the generator's dec must equal its data"
        assert (rkind, rlength) == (kind, length)
        info = golden.parse_frame(frame)
        assert info is not None, f"frame {i} does not parse"
        assert golden.ip_checksum_ok(frame), f"frame {i}: bad IP header checksum"
        assert golden.l4_checksum_ok(frame), f"frame {i}: bad L4 checksum"
        assert len(frame) == (54 if kind == KIND_TCP else 42) + length
        assert (frame[23] == 6) == (kind == KIND_TCP)
        matched = golden.packet_matcher(frame)
        assert (matched is None) == (kind == KIND_OTHER_DSCP), f"frame {i}: eligibility"
        p = len(frame) - length
        payload = frame[p:]
        if kind == KIND_DENSE:
            vals = struct.unpack(f"<{length // 4}I", payload[:length // 4 * 4])
            assert all((v >> 23) & 0xFF >= 127 for v in vals), f"frame {i}: dense frame"
        # The reference: same frame but for the checksum fields (zero there), the
        # decoded payload, and |C|.
        mask = {24, 25} | ({50, 51} if kind == KIND_TCP else {40, 41})
        assert len(rframe) == len(frame)
        assert all(a == b or j in mask for j, (a, b) in enumerate(zip(rframe, frame))), f"frame {i}"
        assert rdec[p:] == golden.decoded_payload(payload, 10, codec), f"frame {i}: decoded payload"
        assert rdec[:p] == rframe[:p]
        assert csize == len(golden.compress_payload(payload, 10, codec)), f"frame {i}: |C|"
    assert kinds == {0, 1, 2, 3}, f"not every kind of frame appeared: {kinds}"
    outcomes = {len(rtl_golden.tx_frame(f, codec=codec)) < len(f) for f, *_ in gen}
    assert outcomes == {True, False}, "expected both compressed and uncompressed frames"


def test_selftest_generator():
    assert harness.run(_probe, PROBE, "inceptionn.sim.test_selftest",
                       testcase=["generator_matches_golden/codec=paper",
                                 "generator_matches_golden/codec=bounded"], tag="generator") == 2


# ----------------------------------------------------------------------------- whole test

PASS_FRAMES = 24


async def _wait(dut, cond, limit, what):
    for _ in range(limit):
        await RisingEdge(dut.clk)
        if cond():
            return
    raise AssertionError(f"{what} not seen in {limit} cycles "
                         f"(ok {int(dut.frames_ok.value)}, bad {int(dut.frames_bad.value)}, "
                         f"reason {int(dut.fail_reason.value):#x})")


@cocotb.test()
async def selftest_passes(dut):
    dut.fault.value = 0
    await _reset(dut)
    hb = []
    for _ in range(64):
        await RisingEdge(dut.clk)
        hb.append(int(dut.heartbeat.value))
    assert 0 < sum(hb) < 64, "heartbeat does not toggle"
    await _wait(dut, lambda: dut.passing.value, 400_000, "pass")
    assert int(dut.frames_ok.value) >= PASS_FRAMES
    assert not dut.fail.value and int(dut.frames_bad.value) == 0
    assert int(dut.frames_sent.value) >= int(dut.frames_ok.value)
    bar = int(dut.ratio_bar.value)
    if os.environ["ENGINES"] == "1":
        assert bar & 1, "compressed traffic should light the first ratio LED"
    else:
        assert bar == 0, "an uncompressed loop has ratio 1"
    # The bar is a thermometer.
    assert bar & (bar + 1) == 0


@cocotb.test()
async def selftest_fails_with_fault(dut):
    dut.fault.value = 1
    await _reset(dut)
    await _wait(dut, lambda: dut.fail.value, 200_000, "fail")
    assert not dut.passing.value
    assert int(dut.frames_bad.value) >= 1
    assert int(dut.fail_reason.value) != 0
    dut._log.info("fault caught: reason %#x after %d good frames",
                  int(dut.fail_reason.value), int(dut.frames_ok.value))


# The self-test top holds both engines again (after their own tests and the loopback),
# about 3 minutes of C++ compile on 2 cores: it runs with the long runs, `make sim-stress`.
@pytest.mark.skipif(os.environ.get("INCEPTIONN_STRESS", "0") in ("", "0"),
                    reason="whole TX+RX self-test top; run by `make sim-stress` (INCEPTIONN_STRESS=1)")
@pytest.mark.parametrize("codec", ["paper", "bounded"])
def test_selftest(codec):
    from inceptionn.hw.selftest import SelfTest
    harness.run(lambda: SelfTest(engines=True, pass_frames=PASS_FRAMES, heartbeat_bit=3,
                                 codec=codec),
                "selftest_engines_" + codec, "inceptionn.sim.test_selftest", env={"ENGINES": 1},
                testcase=["selftest_passes", "selftest_fails_with_fault"], tag="selftest")
