"""Host side of INCEPTIONN (paper Section VI-B): mark a socket's traffic for compression.

The NIC compresses (TX) and decompresses (RX) exactly the IPv4 packets whose DSCP is the
configured one (default 10, ToS 0x28). An application opts in per socket with
setsockopt(IP_TOS); the kernel stack is not modified. The two ECN bits of the ToS byte
belong to congestion control, so tagging keeps them as they are.

Only IPv4 TCP and UDP sockets can be tagged: the engines match IPv4 only, and other
socket types have no ToS the NIC could see.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time

import numpy as np

from ..golden.wire import DSCP_DEFAULT

__all__ = [
    "tag_socket",
    "untag_socket",
    "is_tagged",
    "get_dscp",
    "compressed",
    "gradient_socket",
    "GradientSocket",
    "GRADIENT_MSS",
    "send_floats",
    "recv_floats_into",
    "recv_floats",
]

#: Default MSS of a gradient socket: a multiple of 4 that fits a 1500-byte MTU with the
#: TCP timestamp option (20 IP + 20 TCP + 12 options + 1448 = 1500).
GRADIENT_MSS = 1448
#: Socket buffers of a gradient socket: large, so a ring hop's chunk is one write.
GRADIENT_BUFSIZE = 4 << 20

_ECN_MASK = 0x03


def _check(sock) -> None:
    if not isinstance(sock, socket.socket):
        raise ValueError(f"expected a socket.socket, got {type(sock).__name__}")
    if sock.fileno() < 0:
        raise ValueError("socket is closed")
    if sock.family != socket.AF_INET:
        raise ValueError(
            f"only IPv4 (AF_INET) sockets can be tagged for compression, got {sock.family!r}: "
            "the NIC engines match IPv4 ToS only")
    if sock.type not in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        raise ValueError(f"only TCP or UDP sockets can be tagged, got {sock.type!r}")
    proto = sock.proto
    if proto not in (0, socket.IPPROTO_TCP, socket.IPPROTO_UDP):
        raise ValueError(f"only TCP or UDP sockets can be tagged, got protocol {proto}")


def _check_dscp(dscp: int) -> int:
    if not isinstance(dscp, int) or isinstance(dscp, bool) or not 0 <= dscp < 64:
        raise ValueError(f"DSCP must be an integer in 0..63, got {dscp!r}")
    return dscp


def _get_tos(sock) -> int:
    return sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) & 0xFF


def _set_dscp(sock, dscp: int) -> int:
    """Set the DSCP, keep the ECN bits; returns the previous ToS byte."""
    old = _get_tos(sock)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, (dscp << 2) | (old & _ECN_MASK))
    return old


def get_dscp(sock) -> int:
    """The DSCP the socket's outgoing packets carry."""
    _check(sock)
    return _get_tos(sock) >> 2


def tag_socket(sock, dscp: int = DSCP_DEFAULT) -> int:
    """Mark `sock` so that the NIC compresses its packets; returns the previous ToS byte."""
    _check(sock)
    return _set_dscp(sock, _check_dscp(dscp))


def untag_socket(sock) -> int:
    """Back to best effort (DSCP 0), ECN bits kept; returns the previous ToS byte."""
    _check(sock)
    return _set_dscp(sock, 0)


def is_tagged(sock, dscp: int = DSCP_DEFAULT) -> bool:
    return get_dscp(sock) == _check_dscp(dscp)


@contextlib.contextmanager
def compressed(sock, dscp: int = DSCP_DEFAULT):
    """`with compressed(sock): sock.sendall(grads)` - tagged inside, previous DSCP after.

    Like the paper's MPI_collective_communication_comp: only the gradient exchange is
    compressed; whatever else the socket carries afterwards goes out untouched.
    """
    old = tag_socket(sock, dscp)
    try:
        yield sock
    finally:
        if sock.fileno() >= 0:  # the body may have closed it
            _set_dscp(sock, old >> 2)


def _whole_floats(data) -> memoryview:
    """`data` as bytes if it is whole float32 values, else ValueError (never sent)."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.float32:
            raise ValueError(f"a gradient socket carries float32 only, got a {data.dtype} array")
        data = np.ascontiguousarray(data)
    view = memoryview(data).cast("B")
    if view.nbytes % 4:
        raise ValueError(
            f"a gradient socket carries whole float32 values only: a write of {view.nbytes} "
            "bytes is not a multiple of 4 (the NIC would read every later value shifted "
            "and compress it wrong; send other data on an untagged socket)")
    return view


class GradientSocket(socket.socket):
    """A tagged TCP socket whose writes are whole float32 values (gradient_socket()).

    send / sendall / sendmsg / sendto refuse a buffer that is not a multiple of 4 bytes,
    or a NumPy array that is not float32: such a write is what shifts every later float
    against the NIC's 4-byte grid, and the misaligned counter cannot see it when the
    write also starts the segments (docs/host-contract.md). A short send() is completed
    to the next float boundary before it returns, so the stream offset of every write
    stays a multiple of 4. Accepted sockets are GradientSockets too. What it cannot
    refuse: 4-byte-multiple data that is not floats (an int32 length prefix): that is
    compressed as floats and changed; keep it off tagged sockets."""

    def accept(self):
        fd, addr = self._accept()
        conn = GradientSocket(self.family, self.type, self.proto, fileno=fd)
        if socket.getdefaulttimeout() is None and self.gettimeout():
            conn.setblocking(True)
        return conn, addr

    def send(self, data, flags=0):
        view = _whole_floats(data)
        n = super().send(view, flags)
        if n % 4:        # finish the float it stopped in
            super().sendall(view[n:n + 4 - n % 4], flags)
            n += 4 - n % 4
        return n

    def sendall(self, data, flags=0):
        super().sendall(_whole_floats(data), flags)

    def sendto(self, data, *args):
        return super().sendto(_whole_floats(data), *args)

    def sendmsg(self, buffers, *args):
        views = [_whole_floats(b) if isinstance(b, np.ndarray) else memoryview(b).cast("B")
                 for b in buffers]
        flat = _whole_floats(b"".join(views))
        n = super().sendmsg(views, *args)
        if n % 4:        # finish the float it stopped in
            super().sendall(flat[n:n + 4 - n % 4])
            n += 4 - n % 4
        return n

    def sendfile(self, file, offset=0, count=None):
        raise ValueError("a gradient socket carries float32 from send_floats only, not files")


def gradient_socket(family=socket.AF_INET, *, dscp: int = DSCP_DEFAULT, mss: int = GRADIENT_MSS,
                    bufsize: int = GRADIENT_BUFSIZE) -> socket.socket:
    """A new TCP socket that is safe to tag: every segment starts on a float boundary.

    Configure it before connect() or listen() (the MSS is negotiated in the handshake;
    an accepted socket inherits the listener's options). What it sets, and why
    (docs/host-contract.md):
    - ToS DSCP `dscp` (ECN bits kept): the NIC compresses these packets.
    - TCP_MAXSEG `mss`, a multiple of 4: full segments then end on float boundaries
      (TCP options are whole 32-bit words, so the payload per segment stays a multiple
      of 4 whatever options a segment carries).
    - TCP_NODELAY: Nagle would hold back a short tail and later send it glued to the
      next write; with whole-float writes every segment boundary is a float boundary
      either way, but no write waits for an ACK.
    - large send and receive buffers, so a chunk goes out as one write.
    Write whole float32 arrays only (`send_floats`): the socket is a GradientSocket,
    which refuses any write that is not whole float32 values. IPv6 raises ValueError:
    the engines match IPv4 only.
    """
    if family != socket.AF_INET:
        raise ValueError(f"gradient sockets are IPv4 only (got {family!r}): the NIC engines "
                         "match the IPv4 ToS byte, so an IPv6 flow would never be compressed")
    _check_dscp(dscp)
    if not isinstance(mss, int) or isinstance(mss, bool) or mss % 4 or not 88 <= mss <= 65495:
        raise ValueError(f"mss must be a multiple of 4 in 88..65495, got {mss!r}")
    if not isinstance(bufsize, int) or bufsize < 65536:
        raise ValueError(f"bufsize must be an integer >= 65536, got {bufsize!r}")
    sock = GradientSocket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, bufsize)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, bufsize)
        _set_dscp(sock, dscp)
    except BaseException:
        sock.close()
        raise
    return sock


def _float_view(arr, what):
    a = np.asarray(arr)
    if a.dtype != np.float32:
        raise ValueError(f"{what} must be float32 (a tagged socket carries floats only), "
                         f"got {a.dtype}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous")
    return a


def send_floats(sock, arr) -> None:
    """Send a whole float32 array (little-endian on the wire, as the NIC reads it) so
    that every TCP segment starts on a float boundary (see _first_flight for the one
    case a socket option cannot cover)."""
    a = _float_view(arr, "data")
    if a.dtype.byteorder == ">":
        a = a.astype("<f4")
    view = memoryview(a).cast("B")
    pos = _first_flight(sock, view)
    sock.sendall(view[pos:])


_TCP_INFO_LEN = 232
_FIRST_WINDOW = 65532          # the last float boundary below a 65535-byte window


def _tcp_info_bytes(sock):
    """(bytes_acked, bytes_sent, peer window or None) from TCP_INFO."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    acked = struct.unpack_from("Q", info, 120)[0] if len(info) >= 128 else None
    sent = struct.unpack_from("Q", info, 200)[0] if len(info) >= 208 else None
    wnd = struct.unpack_from("I", info, 228)[0] if len(info) >= 232 else None
    return acked, sent, wnd


def _first_flight(sock, view) -> int:
    """On a connection that has sent nothing yet, send up to 65532 bytes and wait for
    their ACK; returns how many bytes went out.

    The window a peer announces in its SYN is unscaled, normally 65535 bytes, which is
    not a float boundary. A first flight larger than that (MSS 8948: ten segments are
    89,360 bytes) is cut by the sender at the window's edge, 3 bytes off a float, and
    every later segment of the stream is then misaligned (measured, and shown in the
    tests). Every later window comes scaled (a multiple of 2^wscale) from an ACK that is
    itself on a float boundary, so one wait of one round trip at the start suffices.
    """
    acked, sent, wnd = _tcp_info_bytes(sock)
    if acked is None or sent is None or sent:    # bytes_acked counts the SYN: 1 here
        return 0
    first = min(len(view), _FIRST_WINDOW if not wnd else min(wnd, _FIRST_WINDOW)) & ~3
    sock.sendall(view[:first])
    timeout = sock.gettimeout()
    deadline = time.monotonic() + (timeout if timeout is not None else 60.0)
    while _tcp_info_bytes(sock)[0] < acked + first:
        if time.monotonic() > deadline:
            raise TimeoutError("send_floats: the peer did not acknowledge the first flight")
        time.sleep(0.0002)
    return first


def recv_floats_into(sock, out) -> None:
    """Fill the float32 array `out` from the stream; EOF before the end raises
    ConnectionError (never a silently short result)."""
    a = _float_view(out, "out")
    view = memoryview(a).cast("B")
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:], len(view) - got)
        if n == 0:
            raise ConnectionError(f"peer closed the stream after {got} of {len(view)} bytes")
        got += n


def recv_floats(sock, n: int) -> np.ndarray:
    """Receive exactly `n` float32 values."""
    out = np.empty(int(n), dtype=np.float32)
    recv_floats_into(sock, out)
    return out
