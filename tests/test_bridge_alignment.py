"""When Linux sends a tagged TCP segment that starts off a float boundary, and what
`gradient_socket()` + `send_floats()` do about it (docs/host-contract.md).

Each case sends 4 MB of float32 through the bridge on a tagged socket set up the way the
case says and reads the bridge's misaligned-segment counter: the NIC cannot know a
segment's stream offset, so it compresses it anyway; the counter sees segment starts,
not what the bytes are.
"""

import socket

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers import sockets
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import stream_bytes, stream_floats

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

# Values spread over every code band at 2^-10, so that a shifted stream cannot decode
# to the same values by chance (gradients of 1e-3 mostly decode to 0 at this bound).
X = np.random.default_rng(0).normal(0, 0.05, 1 << 20).astype(np.float32)


def _tagged(mss=None, nodelay=True, bufsize=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(30)
    sockets.tag_socket(s)
    if mss:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if bufsize:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, bufsize)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, bufsize)
    return s


def _send(br, writes, *, sender=None, receiver=None, route_mtu=None):
    """Send the byte strings `writes` from host 0 to host 1 on plain tagged sockets;
    returns (bytes received, host 0's port counters)."""
    if route_mtu:
        br.run(0, ["ip", "route", "add", f"{br.addr(1)}/32", "dev", br.ifnames[0],
                   "mtu", str(route_mtu)])
    got = stream_bytes(br, 0, 1, writes, client=lambda: _tagged(**(sender or {})),
                       server=lambda: _tagged(**(receiver or {})))
    return got, br.counters()[0]


def _misaligned(counters):
    assert counters["tagged_tcp_segments"] > 100 and counters["untracked"] == 0
    return counters["misaligned"]


def _assert_delivered(got, c, mtu):
    """What the NIC owes the receiver: every float its 2^-10 roundtrip, except in
    segments TX sent uncompressed (fall-back: compressing a segment of a few floats, as
    TCP sometimes cuts under load, does not save bytes), whose floats arrive exact; no
    more of those than the fall-back frames (host 0's counter) can hold."""
    g = np.frombuffer(bytes(got), "<u4") if not isinstance(got, np.ndarray) else got.view(np.uint32)
    rt, x = golden.roundtrip(X, 10).view(np.uint32), X.view(np.uint32)
    assert g.size == x.size
    wrong = (g != rt) & (g != x)
    assert not wrong.any(), (f"{int(wrong.sum())} floats are neither the roundtrip nor the "
                             f"original, the first at {int(np.argmax(wrong))}")
    exact = int(((g != rt) & (g == x)).sum())
    assert exact <= (mtu // 4) * c["tx_fallback"], (exact, c["tx_fallback"])


def test_a_write_that_is_not_whole_floats_shifts_every_later_segment():
    b = X.tobytes()
    with Bridge(2, mtu=1500) as br:
        got, c = _send(br, [b[:4001], b[4001:]])      # the first write ends mid-float
    assert _misaligned(c) > 0.9 * c["tagged_tcp_segments"]
    # The receiver gets wrong values; only the counter tells.
    assert len(got) == len(b) and got != golden.roundtrip(X, 10).tobytes()


def test_an_mss_that_is_not_a_multiple_of_4():
    with Bridge(2, mtu=1500) as br:
        _, c = _send(br, [X.tobytes()], sender={"mss": 1446})   # 1434-byte segments
    assert _misaligned(c) > 0


@pytest.mark.parametrize("mss, route_mtu, off", [(None, 1499, True), (1448, 1499, False),
                                                 (1448, 1487, True)])
def test_a_path_mtu_that_is_not_52_more_than_a_multiple_of_4(mss, route_mtu, off):
    # The MSS follows the route's (or a learned path) MTU: 1499 - 52 = 1447 payload bytes
    # per segment. TCP_MAXSEG caps it from above, so 1448 holds while the path MTU is
    # at least 1500 - 1; a path MTU of 1487 takes it below (1435 bytes) all the same.
    with Bridge(2, mtu=1500) as br:
        _, c = _send(br, [X.tobytes()], sender={"mss": mss}, route_mtu=route_mtu)
    assert (_misaligned(c) > 0) == off


def test_jumbo_first_flight_is_cut_at_the_unscaled_window():
    # The receiver's SYN-ACK announces 65535 bytes (unscaled); ten 8936-byte segments
    # would not fit, the sender cuts the seventh at byte 65535 and every later segment
    # is 3 bytes off.
    big = {"mss": 8948, "bufsize": 4 << 20}
    with Bridge(2, mtu=9000) as br:
        _, c = _send(br, [X.tobytes()], sender=big, receiver=big)
    assert _misaligned(c) > 0.9 * c["tagged_tcp_segments"]
    # send_floats waits for the first flight's ACK: the same stream stays aligned.
    with Bridge(2, mtu=9000) as br:
        res = stream_floats(br, 0, 1, X)
        c = br.counters()[0]
    assert _misaligned(c) == 0
    _assert_delivered(res.received, c, 9000)


@pytest.mark.parametrize("case", ["nagle", "small send buffer", "odd float counts"])
def test_cases_that_stay_aligned(case):
    """Whole-float writes stay aligned with Nagle on, with a send buffer that keeps the
    sender waiting for space, and with writes of odd numbers of floats."""
    b = X.tobytes()
    writes = {"nagle": [b[i:i + 4004] for i in range(0, len(b), 4004)],
              "small send buffer": [b],
              "odd float counts": [b[i:i + 4 * 997] for i in range(0, len(b), 4 * 997)]}[case]
    sender = {"nagle": {"nodelay": False}, "small send buffer": {"bufsize": 4096}}.get(case, {})
    rate = 0.2 if case == "small send buffer" else None
    with Bridge(2, mtu=1500, rate_gbps=rate) as br:
        got, c = _send(br, writes, sender=sender)
    assert _misaligned(c) == 0
    _assert_delivered(got, c, 1500)


def test_a_gradient_socket_refuses_writes_that_are_not_whole_floats():
    """A short prefix in the same write as the floats: every segment starts on a 4-byte
    stream offset, so the misaligned counter reads 0, yet every value is shifted. The
    counter cannot catch that; the gradient socket refuses the write instead."""
    b = X.tobytes()
    with Bridge(2, mtu=1500) as br:
        got, c = _send(br, [b"abc" + b[:-4]])
        assert _misaligned(c) == 0 and got != golden.roundtrip(X, 10).tobytes()[:len(got)]

        def refusals():
            s = sockets.gradient_socket()
            with s:
                out = []
                for data in (b"abc" + b, b[:4001], X.astype(np.float64), np.arange(8, dtype=np.int32)):
                    for send in (s.send, s.sendall):
                        try:
                            send(data)
                        except ValueError as e:
                            out.append(str(e))
                try:
                    s.sendmsg([b"ab", b"c"])
                except ValueError as e:
                    out.append(str(e))
                return out
        msgs = br.call(0, refusals)
    assert len(msgs) == 9 and all("float32" in m for m in msgs), msgs
    # Whole floats still go, and an accepted socket is a gradient socket too.
    with Bridge(2, mtu=1500) as br:
        res = stream_floats(br, 0, 1, X)
        c = br.counters()[0]
    assert _misaligned(c) == 0
    _assert_delivered(res.received, c, 1500)
