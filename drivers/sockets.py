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

__all__ = [
    "DSCP_COMPRESS",
    "TOS_COMPRESS",
    "tag_socket",
    "untag_socket",
    "is_tagged",
    "get_dscp",
    "compressed",
]

DSCP_COMPRESS = 10
TOS_COMPRESS = DSCP_COMPRESS << 2  # 0x28
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


def tag_socket(sock, dscp: int = DSCP_COMPRESS) -> int:
    """Mark `sock` so that the NIC compresses its packets; returns the previous ToS byte."""
    _check(sock)
    return _set_dscp(sock, _check_dscp(dscp))


def untag_socket(sock) -> int:
    """Back to best effort (DSCP 0), ECN bits kept; returns the previous ToS byte."""
    _check(sock)
    return _set_dscp(sock, 0)


def is_tagged(sock, dscp: int = DSCP_COMPRESS) -> bool:
    return get_dscp(sock) == _check_dscp(dscp)


@contextlib.contextmanager
def compressed(sock, dscp: int = DSCP_COMPRESS):
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
