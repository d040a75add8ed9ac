"""One tagged TCP stream of float32 between two hosts of a Bridge, as an application
would send it: `gradient_socket()` on both ends, `send_floats`, `recv_floats`.

Used by the tests, `make bench-nic` and the demo, so that all three measure the same
thing. Both sockets live in the bridge's namespaces; this process drives them from two
threads, so a failure on either side surfaces here (no thread is left behind).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass

import numpy as np

from . import sockets

__all__ = ["StreamResult", "gradient_mss", "stream_floats", "stream_bytes", "icmp_echo"]


def gradient_mss(mtu: int) -> int:
    """The largest float-aligned MSS for `mtu` with the TCP timestamp option (the kernel
    subtracts the 12 option bytes from the MSS it is given: 1500 -> 1448 payload)."""
    return (mtu - 40 - 12) & ~3


@dataclass
class StreamResult:
    received: np.ndarray   # what the receiving application read
    seconds: float         # from the first write to the last byte read

    def goodput_gbps(self) -> float:
        return self.received.nbytes * 8 / self.seconds / 1e9 if self.seconds else 0.0


def stream_floats(br, src: int, dst: int, data, *, port: int = 5000, mss: int | None = None,
                  dscp: int | None = None, timeout: float = 120.0) -> StreamResult:
    """Send the float32 array `data` from host `src` to host `dst` over one tagged TCP
    connection through the bridge `br`; returns what `dst` received and the time."""
    x = np.ascontiguousarray(data, dtype=np.float32)
    if src == dst:
        raise ValueError("src and dst must be different hosts")
    mss = gradient_mss(br.mtu) if mss is None else mss
    dscp = br.dscp if dscp is None else dscp
    lsock = br.call(dst, sockets.gradient_socket, mss=mss, dscp=dscp)
    csock = None
    try:
        lsock.settimeout(timeout)
        lsock.bind((br.addr(dst), port))
        lsock.listen(1)
        csock = br.call(src, sockets.gradient_socket, mss=mss, dscp=dscp)
        csock.settimeout(timeout)
        csock.connect((br.addr(dst), port))
        conn, _ = lsock.accept()
        with conn:
            conn.settimeout(timeout)
            errors: list[BaseException] = []

            def send():
                try:
                    sockets.send_floats(csock, x)
                except BaseException as e:  # reported below
                    errors.append(e)
                    csock.shutdown(socket.SHUT_RDWR)

            t0 = time.perf_counter()
            th = threading.Thread(target=send, name="stream-sender", daemon=True)
            th.start()
            try:
                y = sockets.recv_floats(conn, x.size)
            finally:
                if th.is_alive():
                    csock.shutdown(socket.SHUT_RDWR)
                th.join(timeout)
            seconds = time.perf_counter() - t0
            if errors:
                raise errors[0]
        return StreamResult(y, seconds)
    finally:
        lsock.close()
        if csock is not None:
            csock.close()


def stream_bytes(br, src: int, dst: int, writes, *, port: int = 5001, family=socket.AF_INET,
                 client=None, server=None, timeout: float = 30.0) -> bytes:
    """Send the byte strings `writes` (one sendall each, then a FIN) from host `src` to
    host `dst` over one TCP connection; returns what `dst` read until EOF.

    `client` / `server` make the two sockets inside their hosts (default: plain sockets
    of `family`), for experiments with socket options: tags, MSS, buffers, Nagle.
    """
    addr = br.addr(dst) if family == socket.AF_INET else br.addr6(dst)
    make = lambda: socket.socket(family, socket.SOCK_STREAM)  # noqa: E731
    lsock = br.call(dst, server or make)
    csock = br.call(src, client or make)
    with lsock, csock:
        lsock.settimeout(timeout)
        csock.settimeout(timeout)
        lsock.bind((addr, port))
        lsock.listen(1)
        csock.connect((addr, port))
        conn, _ = lsock.accept()
        errors: list[BaseException] = []

        def send():
            try:
                for w in writes:
                    csock.sendall(w)
                csock.shutdown(socket.SHUT_WR)
            except BaseException as e:  # reported below
                errors.append(e)

        th = threading.Thread(target=send, name="stream-sender", daemon=True)
        th.start()
        got = bytearray()
        with conn:
            conn.settimeout(timeout)
            while chunk := conn.recv(1 << 20):
                got += chunk
        th.join(timeout)
        if errors:
            raise errors[0]
    return bytes(got)


def icmp_echo(dst: str, payload: bytes, *, timeout: float = 5.0) -> bytes:
    """One ping to `dst` with a raw ICMP socket (no ping binary needed): the reply's
    payload. Call it inside a host, e.g. ``br.call(0, icmp_echo, br.addr(1), b"x")``."""
    from .. import golden
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    with s:
        s.settimeout(timeout)
        body = struct.pack("!BBHHH", 8, 0, 0, 0x4E43, 1) + payload
        csum = golden.internet_checksum(body)
        s.sendto(body[:2] + csum.to_bytes(2, "big") + body[4:], (dst, 0))
        while True:
            pkt = s.recv(65536)
            icmp = pkt[(pkt[0] & 0x0F) * 4:]
            if icmp[0] == 0 and icmp[4:6] == b"\x4e\x43":
                return icmp[8:]
