"""The lanes' bypass tests (hw/lane_bypass.py) against golden, in Amaranth's simulator at
512 bits: they must never send to the bypass lane a frame the engine would change (RX:
restore; TX: compress, or send as a fall-back with its DSCP cleared), and they must send
there the frames that only header fields or the configuration refuse.

RX's frames are the RX testbench's (sim/test_decompression_engine.py: the TX outputs of
its host frames in every wire version, its foreign look-alikes), TX's the TX
testbench's (sim/test_compression_engine.py: every payload length 0..100 as UDP and
TCP, its corner and stress frames), under the configurations that turn the engine off
or narrow it."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import data
from amaranth.sim import Simulator

from inceptionn.golden import Counters
from inceptionn.golden.decompression_engine import versions_mask
from inceptionn.hw.lane_bypass import BYPASS_HEADER_BYTES, rx_sure_bypass, tx_sure_bypass
from inceptionn.rtl import frame_builders as F
from inceptionn.rtl import rtl_golden
from inceptionn.sim import test_compression_engine as T
from inceptionn.sim import test_decompression_engine as R

BEAT = 64
ALL = (1, 2, 3)
# (enable, dscp, versions): the default, off, another DSCP, nothing accepted, one version.
CONFIGS = [(1, 10, ALL), (0, 10, ALL), (1, 12, ALL), (1, 10, ()), (1, 10, (3,))]


RX_FIELDS = {"enable": 1, "dscp": 6, "versions": 3}
TX_FIELDS = {"enable": 1, "dscp": 6, "k": 7, "codec": 1, "version": 2}
# (enable, dscp, k, codec port, version): the default (bounded, version 3); off; another
# DSCP; k above the bounded codec's range; k 0; the paper's codec at k 100 (in its
# range); the bounded codec with version port 1 (out of its range: forwarded).
TX_CONFIGS = [(1, 10, 10, 1, 3), (0, 10, 10, 1, 3), (1, 12, 10, 1, 3), (1, 10, 17, 1, 3),
              (1, 10, 0, 1, 3), (1, 10, 100, 0, 1), (1, 10, 10, 1, 1)]


def _answers(frames, configs, test=rx_sure_bypass, fields=RX_FIELDS):
    """The test's answer for each (frame, configuration), from the frame's first beat."""
    m = Module()
    cfg = Signal(data.StructLayout(fields))
    beat = Signal(8 * BEAT)
    out = Signal()
    m.d.comb += out.eq(test(beat, cfg))
    got = {}

    async def bench(ctx):
        for c, values in enumerate(configs):
            if fields is RX_FIELDS:
                values = values[:2] + (versions_mask(values[2]),)
            ctx.set(cfg, dict(zip(fields, values)))
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
    for test in (rx_sure_bypass, tx_sure_bypass):
        with pytest.raises(ValueError, match="bytes"):
            test(Signal(8 * (BYPASS_HEADER_BYTES - 1)), None)


def _tx_changes(frame, user, enable, dscp, k, codec, version):
    """Whether golden's TX (as the RTL's ports take it) compresses the frame or sends it
    as a fall-back: what the bypass lane must never take."""
    c = Counters()
    rtl_golden.tx_frame(frame, enable=bool(enable), dscp=dscp, k=k, tuser=user, counters=c,
                        codec="bounded" if codec else "paper", version=version)
    return c.compressed + c.fallback > 0


@pytest.fixture(scope="module")
def host():
    return T.length_frames() + T.corner_frames() + T.matrix_frames() + F.mixed_frames(9, 300)


def test_tx_bypass_only_what_tx_forwards(host):
    frames = [f for f, _ in host]
    got = _answers(frames, TX_CONFIGS, tx_sure_bypass, TX_FIELDS)
    changed = 0
    for c, config in enumerate(TX_CONFIGS):
        for j, (f, user) in enumerate(host):
            if _tx_changes(f, user, *config):
                changed += 1
                assert not got[c, j], (f"frame {j} (config {config}) would be changed but "
                                       f"was sent to the bypass lane")
    assert changed > 300                    # the check above had frames to refuse
    for c in (1, 3, 4, 6):                  # off, k out of range, version out of range
        assert all(got[c, j] for j in range(len(frames)))
    # The default configuration's UDP payload lengths 0..3 are all bypassed.
    assert all(got[0, j] for j in range(0, 8, 2))


def test_tx_bypass_takes_frames_the_headers_and_lengths_refuse():
    """Under the default configuration: other EtherTypes, IPv6, other IP protocols,
    fragments, other DSCPs (with and without a VLAN tag), IHL < 5, runts, a TCP data
    offset below 5, UDP with fewer than 4 bytes of payload."""
    pay = bytes(range(200))
    bad_ihl = bytearray(F.udp_frame(pay))
    bad_ihl[14] = 0x44
    bad_doff = bytearray(F.tcp_frame(pay))
    bad_doff[46] = 0x40                         # TCP data offset 4
    bad_udp = bytearray(F.udp_frame(pay))
    bad_udp[39] ^= 1                            # the UDP length's low byte
    opts = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
    frames = [F.arp_frame(), F.ipv6_frame(pay), F.ipv4_frame(pay, proto=1),
              F.fragment_frame(pay), F.fragment_frame(pay, more_fragments=False, offset=3),
              F.udp_frame(pay, tos=0), F.tcp_frame(pay, tos=0xB8), F.udp_frame(pay, tos=0x2C, vlan=3),
              bytes(bad_ihl), F.raw_frame(13, 1), bytes(bad_doff), F.udp_frame(b"\x01\x02\x03"),
              F.udp_frame(b"\x01\x02\x03", vlan=5), F.udp_frame(b"", pad_to=60)]
    got = _answers(frames, TX_CONFIGS[:1], tx_sure_bypass, TX_FIELDS)
    missed = [j for j in range(len(frames)) if not got[0, j]]
    assert not missed, f"frames {missed} went to an engine lane"
    for f in frames:
        assert not _tx_changes(f, False, *TX_CONFIGS[0])
    # To an engine: 4 bytes of UDP or TCP payload (TCP with options too), a 64-byte
    # frame, DSCP 10 with ECN bits, a pure ACK, a UDP length that disagrees with the IP
    # one: the engine decides.
    to_engine = [F.udp_frame(pay[:4]), F.tcp_frame(pay[:4]), F.tcp_frame(pay[:4], tcp_options=opts),
                 F.udp_frame(pay[:22]), F.udp_frame(pay, tos=0x2B), F.tcp_frame(b""),
                 bytes(bad_udp)]
    got = _answers(to_engine, TX_CONFIGS[:1], tx_sure_bypass, TX_FIELDS)
    assert not any(got.values()), got
