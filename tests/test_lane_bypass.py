"""The lanes' bypass test (hw/lane_bypass.py) against golden's RX, in Amaranth's simulator
at 512 bits: it must never send to the bypass lane a frame the RX engine would restore,
and it must send there the frames that only header fields or the configuration refuse.

The frames are the RX testbench's (sim/test_decompression_engine.py: the TX outputs of
its host frames in every wire version, its foreign look-alikes) under the
configurations that turn the engine off or narrow it."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import data
from amaranth.sim import Simulator

from inceptionn.golden import Counters
from inceptionn.golden.decompression_engine import versions_mask
from inceptionn.hw.lane_bypass import BYPASS_HEADER_BYTES, rx_sure_bypass
from inceptionn.rtl import frame_builders as F
from inceptionn.sim import test_decompression_engine as R

BEAT = 64
ALL = (1, 2, 3)
# (enable, dscp, versions): the default, off, another DSCP, nothing accepted, one version.
CONFIGS = [(1, 10, ALL), (0, 10, ALL), (1, 12, ALL), (1, 10, ()), (1, 10, (3,))]


def _answers(frames, configs):
    """The test's answer for each (frame, configuration), from the frame's first beat."""
    m = Module()
    cfg = Signal(data.StructLayout({"enable": 1, "dscp": 6, "versions": 3}))
    beat = Signal(8 * BEAT)
    out = Signal()
    m.d.comb += out.eq(rx_sure_bypass(beat, cfg))
    got = {}

    async def bench(ctx):
        for c, (enable, dscp, versions) in enumerate(configs):
            ctx.set(cfg, {"enable": enable, "dscp": dscp, "versions": versions_mask(versions)})
            for j, f in enumerate(frames):
                # The bytes past a short frame's end are whatever the bus holds.
                first = f[:BEAT] + bytes([0xA5]) * max(0, BEAT - len(f))
                ctx.set(beat, int.from_bytes(first, "little"))
                got[c, j] = ctx.get(out)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return got


def _golden_bypassed(frame, enable, dscp, versions):
    c = Counters()
    R.rx_frame(frame, dscp=dscp, enable=bool(enable), versions=versions, counters=c)
    return c.bypassed == 1


@pytest.fixture(scope="module")
def wire():
    originals = R._originals(3)
    frames = [f for f, _ in R._wire(originals, seed=4)] + R.lookalikes(random.Random(5))[::2]
    return frames


def test_bypass_only_what_rx_forwards(wire):
    got = _answers(wire, CONFIGS)
    restored = 0
    for c, (enable, dscp, versions) in enumerate(CONFIGS):
        for j, f in enumerate(wire):
            golden = _golden_bypassed(f, enable, dscp, versions)
            restored += not golden
            assert golden or not got[c, j], (
                f"frame {j} (config {CONFIGS[c]}) would be restored but was sent to the bypass lane")
    assert restored > 100                   # the check above had frames to refuse
    for c in (1, 3):                         # engine off, no version accepted: every frame
        assert all(got[c, j] for j in range(len(wire)))


def test_bypass_takes_frames_the_headers_refuse():
    """Under the default configuration: other EtherTypes, IPv6, other IP protocols,
    fragments, other DSCPs (with and without a VLAN tag), IHL < 5, a TX fall-back (DSCP
    cleared), runts, and DSCP-10 frames whose shim magic names no accepted version (UDP
    and TCP, with and without a VLAN tag)."""
    pay = bytes(range(200))
    bad_ihl = bytearray(F.udp_frame(pay))
    bad_ihl[14] = 0x44
    frames = [F.arp_frame(), F.ipv6_frame(pay), F.ipv4_frame(pay), F.ipv4_frame(pay, proto=1),
              F.fragment_frame(pay), F.fragment_frame(pay, more_fragments=False, offset=3),
              F.udp_frame(pay, tos=0), F.tcp_frame(pay, tos=0xB8), F.udp_frame(pay, tos=0x2C, vlan=3),
              bytes(bad_ihl), R.tx_frame(F.udp_frame(F.incompressible_payload(200, 5))),
              F.raw_frame(13, 1), F.udp_frame(pay), F.udp_frame(pay, vlan=4), F.tcp_frame(pay),
              F.tcp_frame(pay, vlan=4)]
    got = _answers(frames, CONFIGS[:1])
    missed = [j for j in range(len(frames)) if not got[0, j]]
    assert not missed, f"frames {missed} went to an engine lane"
    for f in frames:
        assert _golden_bypassed(f, 1, 10, ALL)
    # To an engine: DSCP 10 with the ECN bits set and a version-3 magic; a version-1
    # magic when version 1 is accepted; a magic behind TCP options.
    shim = b"\x01\x00\xc7\x0a" + pay
    v1 = b"\x01\x00\xc5\x0a" + pay
    opts = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
    got = _answers([F.udp_frame(shim, tos=0x2B), F.tcp_frame(shim, vlan=2), F.udp_frame(v1),
                    F.tcp_frame(pay, tcp_options=opts)], [(1, 10, ALL)])
    assert not any(got.values()), got
    assert _answers([F.udp_frame(v1)], [(1, 10, (3,))])[0, 0]


def test_bypass_refuses_a_beat_too_narrow():
    with pytest.raises(ValueError, match="bytes"):
        rx_sure_bypass(Signal(8 * (BYPASS_HEADER_BYTES - 1)), None)
