"""Foreign DSCP-10 traffic through the software NIC (docs/wire-format.md, sections 9 and
10): a host whose TX engine is off sends a tagged TCP stream of random bytes with shim
look-alikes of every kind in it; the receiving RX engine is on, with its default versions
mask (version 3 only). Every byte arrives unchanged, retransmissions included (the wire
loses some frames). A receiver that still accepts versions 1 and 2 (the engine before
version 3) stalls on a version-1 look-alike: the test can fail. Needs root (network
namespaces, TAP)."""

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers import sockets
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import stream_bytes

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

NBYTES = 1 << 20
WINDOW = 1448                   # at least one segment (<= MSS, 4-aligned) starts inside


def _shim(length, magic, k):
    return length.to_bytes(2, "big") + bytes([magic, k])


def _genuine_shim():
    """The first 8 bytes of a payload a TX engine compressed for another connection."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    x = np.random.default_rng(3).normal(0, 0.01, 400).astype(np.float32).tobytes()
    f = bytes(Ether() / IP(src="10.1.0.1", dst="10.1.0.2", tos=0x28) / TCP(sport=1, dport=2) / x)
    w = golden.tx_frame(f)
    return w[golden.packet_matcher(w).payload_offset:][:8]


# Runs, each one MSS long, of a repeated unit: some segment starts with the unit (at a
# 4-aligned offset; the 8-byte genuine shim at an 8-aligned one, as MSS 1448 is).
LOOKALIKES = [
    _shim(3000, 0xC5, 10),                     # version 1: L > received
    _shim(3000, 0xC6, 10),                     # version 2: k in 1..16, L restorable
    _shim(3000, 0xC7, 10),                     # version 3 but for the check word
    _shim(1449, 0xC7, 16) + bytes(4),          # ... with a zero check word
    bytes(4), b"\xff" * 4, b"\x0b\xb8\xc7\x0a", b"\xc7\xc7\xc7\xc7",
]


def _stream(units):
    """Random bytes (no shim magic at any 4-aligned offset) with a run of each unit."""
    data = np.frombuffer(np.random.default_rng(22).bytes(NBYTES), np.uint8).copy()
    third = data[2::4]
    third[(third == 0xC5) | (third == 0xC6) | (third == 0xC7)] = 0x55
    for i, unit in enumerate(units):
        at = (i + 1) * (NBYTES // (len(units) + 1)) // 8 * 8
        data[at:at + 2 * WINDOW] = np.frombuffer(unit * (2 * WINDOW // len(unit)), np.uint8)
    return data.tobytes()


def _send_foreign(data, timeout, **bridge):
    """Host 0 (TX engine off) -> host 1 (RX engine on) over a tagged TCP connection;
    returns (bytes received or None if the stream stalled, host 1's counters)."""
    # The Python switch: there one port's engines can be turned off on a running bridge
    # (the compiled switch takes one setting for every port). Its RX is the golden model,
    # which the compiled RX equals frame for frame (tests/test_bridge_fastpath.py).
    with Bridge(2, mtu=1500, k=10, switch="python", **bridge) as br:
        br.ports[0].enable = False        # a host without our TX engine that uses DSCP 10
        try:
            got = stream_bytes(br, 0, 1, [data], client=sockets.gradient_socket,
                               server=sockets.gradient_socket, timeout=timeout)
        except TimeoutError:
            got = None
        c = br.counters()[1]
    return got, c


def test_a_foreign_stream_with_lookalikes_of_every_kind_arrives_unchanged():
    """Every look-alike, and the retransmissions of the segments the wire loses."""
    data = _stream(LOOKALIKES + [_genuine_shim()])
    got, c = _send_foreign(data, 40, drop=0.01, seed=5)
    assert got == data
    assert c["rx_decompressed"] == 0 and c["flagged"] == 0
    # The version-3 look-alikes got as far as the check word, which refused them.
    assert c["rx_check_failed"] >= 1, c


def test_a_receiver_that_accepts_versions_1_and_2_stalls_on_a_lookalike():
    """The engine before version 3: mangled on every retransmission, never completes."""
    # 4 s: TCP retransmits the segment several times within it (from 0.2 s, doubling).
    got, c = _send_foreign(_stream([_shim(3000, 0xC5, 10)]), 4, versions=(1, 2))
    assert got is None
    assert c["rx_decompressed"] >= 2, c
