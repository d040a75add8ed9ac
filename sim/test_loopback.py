"""TX -> link -> RX loopback: for every host frame f the other host receives exactly
golden.rx_frame(golden.tx_frame(f)), and the restored frames pass the checksum
checks a Linux receiver makes (scapy recomputes the IP and L4 checksums).

The link between the engines is a FIFO whose output stalls at random (sim/loopback_top.py).
A third Verilator build of both engines: `make sim-stress` runs it, `make test` does not.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from inceptionn.golden.counters import Counters
from inceptionn.golden import versions_mask
from inceptionn.rtl.rtl_golden import rx_frame, tx_frame   # golden as the RTL's ports
from inceptionn.rtl import frame_builders as F
from inceptionn.rtl import harness
from inceptionn.sim.axis import (AxisDriver, AxisMonitor, Clock, pause_generator, stress,
                                 stress_count)
from inceptionn.sim.engines import loopback_design  # the runner's factory
from inceptionn.sim.test_decompression_engine import DEMO_DIR

DUT = "loopback"
CODECS = ("paper", "bounded")     # the codec port: wire format version 1 / the bounded codec
# The codec and the wire version each run uses (TX's version port, RX's accepted versions):
# the paper's reproduction (version 1) and the default (version 3); version 2 is in the
# engines' own matrices.
RUNS = {"paper": 1, "bounded": 3}
COUNTERS = ("frames_in", "frames_out", "compressed", "fallback", "dropped", "decompressed",
            "bypassed", "malformed", "payload_bytes_in", "payload_bytes_out", "version1",
            "version2", "version3", "check_failed")




async def _reset(dut, enable=1, dscp=10, k=10, codec="bounded"):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.enable.value = enable
    dut.dscp.value = dscp
    dut.k.value = k
    dut.codec.value = CODECS.index(codec)
    dut.version.value = 3
    dut.versions.value = versions_mask((RUNS[codec],))
    dut.no_stall.value = 0
    dut.s_axis_tvalid.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


def _expected(frames, k=10, codec="bounded"):
    """Golden composition: [(wire frame, (host frame out, bad))] for the frames TX does
    not drop, and the end-to-end counters the loopback top exposes."""
    tc, rc = Counters(), Counters()
    exp = []
    for f, u in frames:
        w = tx_frame(f, k=k, tuser=u, counters=tc, codec=codec)
        if w is not None:
            exp.append((w, rx_frame(w, tuser=u, counters=rc, versions=(RUNS[codec],))))
    counters = {
        "frames_in": tc.frames_in, "compressed": tc.compressed, "fallback": tc.fallback,
        "dropped": tc.dropped, "payload_bytes_in": tc.payload_bytes_in,
        "frames_out": rc.frames_out, "decompressed": rc.decompressed,
        "bypassed": rc.bypassed, "malformed": rc.malformed,
        "payload_bytes_out": rc.payload_bytes_out,
        "version1": rc.version1, "version2": rc.version2, "version3": rc.version3,
        "check_failed": rc.check_failed,
    }
    return exp, counters


def _scapy_checksums_ok(frame):
    """True if the IP and TCP/UDP checksums scapy recomputes equal those in the frame."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether
    ip = Ether(frame)[IP]
    l4 = TCP if TCP in ip else UDP
    fresh = IP(bytes(ip))
    del fresh.chksum
    if not (l4 is UDP and ip[UDP].chksum == 0):   # a UDP checksum of 0 means "none"
        del fresh[l4].chksum
    fresh = IP(bytes(fresh))
    return fresh.chksum == ip.chksum and fresh[l4].chksum == ip[l4].chksum


def _host_frames(seed, count):
    rng = random.Random(seed)
    frames = F.mixed_frames(seed, count, jumbo=0.02)
    vals, _ = F.gradient_values(2300, seed=seed, demo_dir=DEMO_DIR)
    grads = F.float_payload(vals)
    frames += [(F.udp_frame(grads[:8972]), False), (F.tcp_frame(grads[:1460]), False),
               (F.udp_frame(grads[:1472], vlan=9, checksum=False), False),
               (F.tcp_frame(F.special_payload(), tcp_options=[("MSS", 1460)]), False),
               (F.udp_frame(grads[:9200]), False)]        # too big for TX: dropped
    rng.shuffle(frames)
    return frames


async def _run(dut, frames, idle, backpressure, seed):
    drv = AxisDriver(dut, dut.clk, pause=pause_generator(idle, seed))
    mon = AxisMonitor(dut, dut.clk, pause=pause_generator(backpressure, seed + 1))
    task = cocotb.start_soon(mon.run())
    await drv.send(frames)
    return mon, task


@cocotb.test()
@cocotb.parametrize(codec=CODECS)
async def loopback_mixed(dut, codec):
    """TX -> link -> RX in one wire format version: the host frames out as golden's
    rx_frame(tx_frame(f)), restored checksums valid, counters as golden's."""
    await _reset(dut, codec=codec)
    count = stress_count(100, 3000)
    frames = _host_frames(80 + CODECS.index(codec), count)
    exp, counters = _expected(frames, codec=codec)
    mon, task = await _run(dut, frames, "random", "random", 81)
    await mon.wait_frames(len(exp))
    await ClockCycles(dut.clk, 8)
    task.cancel()
    assert len(mon.frames) == len(exp)
    checked = 0
    for i, (got, (wire, want)) in enumerate(zip(mon.frames, exp)):
        assert got == want, (f"frame {i}: {len(got[0])} bytes tuser {got[1]}, "
                             f"expected {len(want[0])} bytes tuser {want[1]}")
        if got[0] != wire:
            # decompressed: the receiving host's stack must accept the checksums
            assert _scapy_checksums_ok(got[0]), f"frame {i}: restored checksums are wrong"
            checked += 1
    assert checked > count // 2
    for name in COUNTERS:
        assert int(getattr(dut, name).value) == counters[name], (
            f"{name}: RTL {int(getattr(dut, name).value)}, golden {counters[name]}")
    assert counters["dropped"] >= 1 and counters["fallback"] >= 1 and counters["malformed"] == 0
    assert counters[f"version{RUNS[codec]}"] == counters["decompressed"]
    assert counters["check_failed"] == 0


@cocotb.test()
async def loopback_reset_mid_frame(dut):
    """A reset while frames are in both engines and in the link leaves all clean."""
    await _reset(dut)
    vals, _ = F.gradient_values(2300, seed=90, demo_dir=DEMO_DIR)
    big = [(F.udp_frame(F.float_payload(vals)[:8000 + 64 * i]), False) for i in range(4)]
    mon, task = await _run(dut, big, "none", "cyclic", 91)
    await ClockCycles(dut.clk, 300)
    task.cancel()
    dut.s_axis_tvalid.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    assert int(dut.frames_in.value) == 0 and int(dut.frames_out.value) == 0
    frames = _host_frames(92, 60) + big
    exp, counters = _expected(frames)
    mon, task = await _run(dut, frames, "cyclic", "random", 93)
    await mon.wait_frames(len(exp))
    task.cancel()
    assert mon.frames == [want for _, want in exp]
    for name in COUNTERS:
        assert int(getattr(dut, name).value) == counters[name], name


@pytest.mark.skipif(not stress(), reason="a third build of both engines (minutes): make "
                    "sim-stress; make test has each engine's own matrix and the TX -> RX "
                    "compiled loop (sim/test_rtl_loop.py)")
def test_loopback():
    assert harness.run(loopback_design, DUT, "inceptionn.sim.test_loopback") == 3
