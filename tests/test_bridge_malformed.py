"""Broken compressed frames injected into the wire reach the host flagged and counted, and
the receiving kernel drops them by checksum: nothing is silently delivered wrong."""

import socket

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

VALUES = np.random.default_rng(3).normal(0, 0.05, 301).astype(np.float32)


def _wire_frame(br):
    """A tagged UDP datagram from host 0 to host 1 as host 0's TX engine puts it on the
    wire (compressed, L4 checksum over the values the receiver will see)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    host = bytes(Ether(src=br.mac(0), dst=br.mac(1)) /
                 IP(src=br.addr(0), dst=br.addr(1), tos=0x28, id=7) /
                 UDP(sport=6000, dport=6001) / VALUES.tobytes())
    return golden.tx_frame(host, k=br.k, codec=br.codec)


def _reframe(wire, comp):
    info = golden.packet_matcher(wire)
    b = bytearray(wire[:info.payload_offset] + comp)
    b[info.l3 + 2:info.l3 + 4] = (info.ip_total_len + len(comp) - info.payload_len).to_bytes(2, "big")
    b[info.l4 + 4:info.l4 + 6] = (8 + len(comp)).to_bytes(2, "big")     # UDP length
    b[info.l3 + 10:info.l3 + 12] = golden.ip_header_checksum(bytes(b[info.l3:info.l3 + 20])).to_bytes(2, "big")
    return bytes(b)


def _udp_receiver(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(0.5)
    return s


def _recv_all(s):
    got = []
    try:
        while True:
            got.append(s.recv(65536))
    except TimeoutError:
        return got


def _broken(wire):
    info = golden.packet_matcher(wire)
    comp = wire[info.payload_offset:]
    return {  # name -> (compressed payload, flagged by RX)
        "bad shim magic": (comp[:2] + b"\xC4" + comp[3:], False),   # RX bypasses it as is
        "groups run out": (comp[:40], True),
        "a byte left over": (comp + b"\x00", True),
        # Well-formed to the RX engine (the groups still end with the payload), wrong
        # values: only the checksum can tell.
        "tag word says 8 raw floats": (comp[:4] + b"\xff\xff" + comp[6:], False),
    }


def _inject_all(deliver_flagged):
    """Inject the control frame, then every broken one; returns (what the socket got
    for the broken ones, kernel UDP counter deltas, port counter deltas)."""
    # Wire version 1: a version-2 receiver already bypasses "groups run out" by its
    # shortest-payload rule (tests/test_golden_frames_v2.py).
    with Bridge(2, mtu=1500, k=10, deliver_flagged=deliver_flagged, codec="paper") as br:
        wire = _wire_frame(br)
        rx = br.call(1, _udp_receiver, 6001)
        with rx:
            br.inject(1, wire)                                   # the control: delivered
            assert _recv_all(rx) == [golden.roundtrip(VALUES, 10, "paper").tobytes()]
            k0, c0 = br.snmp(1)["Udp"], br.counters()[1]
            for comp, _ in _broken(wire).values():
                br.inject(1, _reframe(wire, comp))
            got = _recv_all(rx)
            k1, c1 = br.snmp(1)["Udp"], br.counters()[1]
    return got, {k: k1[k] - k0[k] for k in k1}, {k: c1[k] - c0[k] for k in ("rx_malformed", "rx_decompressed", "rx_frames_in", "flagged", "to_host_frames")}


def test_injected_broken_frames_are_flagged_counted_and_never_delivered():
    got, kernel, port = _inject_all(deliver_flagged=False)
    assert got == []                                              # nothing delivered wrong
    # (other traffic, ARP and IPv6 neighbour discovery, may cross meanwhile: bypassed)
    assert (port["rx_decompressed"], port["rx_malformed"], port["flagged"]) == (3, 2, 2)
    assert port["to_host_frames"] == port["rx_frames_in"] - 2
    # The two not flagged reach the kernel, which drops them by checksum (TX computed it
    # over the values the receiver should see, not over the compressed bytes).
    assert kernel["InCsumErrors"] == 2 and kernel["InDatagrams"] == 0


def test_flagged_frames_handed_over_are_caught_by_checksum_except_when_right():
    got, kernel, port = _inject_all(deliver_flagged=True)
    assert port["flagged"] == 2 and port["to_host_frames"] == port["rx_frames_in"]
    # A trailing byte after the last group is malformed, yet every value decodes right:
    # the one datagram the kernel accepts carries exactly the roundtrip values.
    assert got == [golden.roundtrip(VALUES, 10, "paper").tobytes()]
    assert kernel["InCsumErrors"] == 3 and kernel["InDatagrams"] == 1
