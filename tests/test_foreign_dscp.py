"""Foreign DSCP-10 traffic through the software NIC (docs/wire-format.md, section 9): a host
whose TX engine is off sends a tagged TCP stream of random bytes; the receiving RX engine
is on. A segment whose first payload bytes look like a shim is decompressed, mangled and
dropped, and its retransmissions carry the same bytes: the stream never completes.
Version 2's acceptance rule forwards what it cannot have made; the compression DSCP must
still be reserved. Needs root (network namespaces, TAP)."""

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


def _stream(word):
    """Random bytes with no shim magic at any 4-aligned offset, and, if given, a run of
    ``word`` (4 bytes) one MSS long in the middle: some segment then starts with it."""
    data = np.frombuffer(np.random.default_rng(22).bytes(NBYTES), np.uint8).copy()
    third = data[2::4]
    third[(third == golden.SHIM_MAGIC_V1) | (third == golden.SHIM_MAGIC_V2)] = 0x55
    if word is not None:
        mid = NBYTES // 2
        data[mid:mid + WINDOW] = np.frombuffer(word * (WINDOW // 4), np.uint8)
    return data.tobytes()


def _send_foreign(data, timeout):
    """Host 0 (TX engine off) -> host 1 (RX engine on) over a tagged TCP connection;
    returns (bytes received or None if the stream stalled, host 1's RX counters)."""
    # The Python switch: there one port's engines can be turned off on a running bridge
    # (the compiled switch takes one setting for every port). Its RX is the golden model,
    # which the compiled RX equals frame for frame (tests/test_bridge_fastpath.py).
    with Bridge(2, mtu=1500, k=10, switch="python") as br:
        br.ports[0].enable = False        # a host without our TX engine that uses DSCP 10
        try:
            got = stream_bytes(br, 0, 1, [data], client=sockets.gradient_socket,
                               server=sockets.gradient_socket, timeout=timeout)
        except TimeoutError:
            got = None
        c = br.counters()[1]
    return got, c


def _shim(length, magic, k):
    return length.to_bytes(2, "big") + bytes([magic, k])


def test_a_foreign_stream_without_shim_lookalikes_completes():
    data = _stream(None)
    got, c = _send_foreign(data, 30)
    assert got == data and c["rx_decompressed"] == 0


@pytest.mark.parametrize("word,why", [
    (_shim(3000, 0xC5, 10), "version 1: L > received"),
    (_shim(3000, 0xC6, 10), "version 2: k in 1..16, 3000 bytes restorable from 1448"),
])
def test_a_shim_lookalike_stalls_the_stream(word, why):
    """Mangled on every retransmission: the stream does not complete."""
    # 4 s: TCP retransmits the segment several times within it (from 0.2 s, doubling).
    got, c = _send_foreign(_stream(word), 4)
    assert got is None, why
    # The original segment and at least one retransmission were decompressed (and
    # dropped: flagged malformed, or by the kernel's checksum).
    assert c["rx_decompressed"] >= 2, c


@pytest.mark.parametrize("word", [_shim(3000, 0xC6, 0), _shim(3000, 0xC6, 17), _shim(3000, 0xC6, 0xC6)])
def test_version_2_rule_forwards_lookalikes_it_cannot_have_made(word):
    data = _stream(word)
    got, c = _send_foreign(data, 30)
    assert got == data and c["rx_decompressed"] == 0
