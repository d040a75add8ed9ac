"""Links between ranks: a gradient (data) socket and an untagged control socket per
neighbour, set up from a rendezvous store, with errors that name the rank.

Data sockets carry float32 only (tagged `gradient_socket()`s when the NIC compresses,
plain sockets otherwise); everything else (lengths, dtypes, the abort notice) goes on
the control sockets, which are never tagged: the NIC would compress an integer as a
float. Every socket has a timeout, so a rank that stops answering makes its neighbours
raise instead of hanging, and a rank that dies closes its sockets, which its neighbours
see at once.
"""

from __future__ import annotations

import datetime
import json
import socket
import struct
import time

import numpy as np

from .. import sockets

__all__ = ["CollectiveError", "Collective", "Link", "Listener", "rendezvous", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 60.0
_HELLO = struct.Struct("!4sII")        # magic, rank, local port of its data connection
_MAGIC = b"INCR"


class CollectiveError(RuntimeError):
    """A peer failed, a connection dropped, or the ranks disagree; names the rank."""


def _plain_socket():
    """An untagged TCP socket with Nagle off: the collectives write a header, then
    floats, then wait for the peer's answer; with Nagle on, a small last write waits for
    the peer's delayed ACK (40 ms on Linux) on every call."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Listener:
    """Where a rank accepts its peers: a control port and a data port.

    Data connections carry floats from their first byte (a hello would shift every later
    float, and break the first-flight rule of send_floats), so a peer names its data
    connection in the hello on its control connection: by the data socket's local port.
    Accepted sockets inherit the listener's options, so the data listener is a gradient
    socket when the data is tagged (the MSS is fixed in the handshake).
    """

    def __init__(self, host: str, *, compress: bool, mss: int, dscp: int):
        self.ctrl = _plain_socket()
        self.data = (sockets.gradient_socket(mss=mss, dscp=dscp) if compress
                     else _plain_socket())
        for s in (self.ctrl, self.data):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, 0))
            s.listen(64)
        self.address = f"{host}:{self.ctrl.getsockname()[1]}:{self.data.getsockname()[1]}"

    def accept(self, ranks, timeout: float) -> dict:
        """Accept a control and a data connection from each of `ranks`; {rank: (ctrl, data)}."""
        deadline = time.monotonic() + timeout
        ctrl, data_by_port = {}, {}
        while len(ctrl) < len(ranks):
            conn = self._accept(self.ctrl, deadline, ranks, ctrl)
            magic, rank, port = _HELLO.unpack(_recv_exact(conn, _HELLO.size, "a peer's hello"))
            if magic != _MAGIC or rank not in ranks:
                conn.close()
                continue
            ctrl[rank] = (conn, port)
        while len(data_by_port) < len(ranks):
            conn = self._accept(self.data, deadline, ranks, data_by_port)
            data_by_port[conn.getpeername()[1]] = conn
        out = {}
        for rank, (c, port) in ctrl.items():
            if port not in data_by_port:
                raise CollectiveError(f"rank {rank}'s data connection did not arrive")
            out[rank] = (c, data_by_port[port])
        return out

    @staticmethod
    def _accept(listener, deadline, ranks, got):
        listener.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            raise CollectiveError(f"only {len(got)} of the connections from ranks "
                                  f"{sorted(ranks)} arrived in time") from None
        conn.settimeout(max(1.0, deadline - time.monotonic()))
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def close(self):
        self.ctrl.close()
        self.data.close()


def _recv_exact(sock, n, what):
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except TimeoutError:
            raise CollectiveError(f"timed out waiting for {what}") from None
        except OSError as e:
            raise CollectiveError(f"connection lost while waiting for {what}: {e}") from None
        if not chunk:
            raise CollectiveError(f"connection closed while waiting for {what}")
        buf += chunk
    return bytes(buf)


def _connect_one(host, port, tagged, mss, dscp, timeout):
    s = sockets.gradient_socket(mss=mss, dscp=dscp) if tagged else _plain_socket()
    s.settimeout(timeout)
    deadline = time.monotonic() + timeout
    while True:
        try:
            s.connect((host, port))
            return s
        except (ConnectionRefusedError, TimeoutError) as e:
            if time.monotonic() > deadline:
                s.close()
                raise CollectiveError(f"cannot connect to {host}:{port}: {e}") from None
            time.sleep(0.05)


def _connect(address: str, my_rank: int, *, compress: bool, mss: int, dscp: int, timeout: float):
    """(ctrl, data) sockets to the peer listening at `address`."""
    host, cport, dport = address.rsplit(":", 2)
    data = _connect_one(host, int(dport), compress, mss, dscp, timeout)
    ctrl = _connect_one(host, int(cport), False, mss, dscp, timeout)
    ctrl.sendall(_HELLO.pack(_MAGIC, my_rank, data.getsockname()[1]))
    return ctrl, data


class Link:
    """Control and data sockets with one peer, as seen from this rank."""

    def __init__(self, peer: int, ctrl, data):
        self.peer, self.ctrl, self.data = peer, ctrl, data

    def send_msg(self, obj) -> None:
        body = json.dumps(obj).encode()
        try:
            self.ctrl.sendall(struct.pack("!I", len(body)) + body)
        except OSError as e:
            raise CollectiveError(f"rank {self.peer}: control connection lost: {e}") from None

    def recv_msg(self):
        n = struct.unpack("!I", _recv_exact(self.ctrl, 4, f"a message from rank {self.peer}"))[0]
        return json.loads(_recv_exact(self.ctrl, n, f"a message from rank {self.peer}"))

    def send_floats(self, arr) -> None:
        try:
            sockets.send_floats(self.data, arr)
        except TimeoutError:
            raise CollectiveError(f"rank {self.peer} stopped reading (timeout)") from None
        except OSError as e:
            raise CollectiveError(f"rank {self.peer}: data connection lost: {e}") from None

    def recv_floats_into(self, out) -> None:
        try:
            sockets.recv_floats_into(self.data, out)
        except TimeoutError:
            raise CollectiveError(f"rank {self.peer} sent nothing (timeout)") from None
        except (OSError, ConnectionError) as e:
            raise CollectiveError(f"rank {self.peer}: data connection lost: {e}") from None

    def close(self):
        for s in (self.ctrl, self.data):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _store_get(store, key: str, timeout: float, what: str):
    """store.get(key), waiting at most `timeout` seconds (a torch Store's own get waits
    for the store's timeout, minutes by default, if a peer died before publishing)."""
    if hasattr(store, "wait"):
        try:
            store.wait([key], datetime.timedelta(seconds=timeout))
        except Exception as e:  # torch raises DistStoreError (a RuntimeError) on timeout
            raise CollectiveError(f"{what} did not appear within {timeout:g} s: {e}") from None
    value = store.get(key)
    return value.decode() if isinstance(value, bytes) else value


def rendezvous(store, rank: int, world: int, peers, *, host: str, prefix: str,
               compress: bool, mss: int, dscp: int, timeout: float) -> dict[int, Link]:
    """Links to `peers` (ranks): a rank connects to higher ranks and accepts lower ones,
    so each pair has exactly one connection per channel. `store` is a torch.distributed
    Store or anything with set(key, value) and get(key) -> bytes."""
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not in 0..{world - 1}")
    listener = Listener(host, compress=compress, mss=mss, dscp=dscp)
    try:
        store.set(f"{prefix}/addr/{rank}", listener.address)
        links = {}
        higher = [p for p in peers if p > rank]
        lower = [p for p in peers if p < rank]
        for p in higher:
            addr = _store_get(store, f"{prefix}/addr/{p}", timeout, f"rank {p}'s address")
            links[p] = Link(p, *_connect(addr, rank, compress=compress, mss=mss, dscp=dscp,
                                         timeout=timeout))
        if lower:
            for p, (ctrl, data) in listener.accept(set(lower), timeout).items():
                links[p] = Link(p, ctrl, data)
        return links
    finally:
        listener.close()


def as_float32_buffer(x, what="buffer") -> np.ndarray:
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise ValueError(f"{what} must be float32 (a gradient socket carries float32 only), "
                         f"got {a.dtype}")
    if a.ndim != 1 or not a.flags.c_contiguous:
        raise ValueError(f"{what} must be a 1-D contiguous array, got shape {a.shape}")
    return a


class Collective:
    """What Ring and WorkerAggregator share: their links, closed once."""
    _links: dict

    def close(self):
        for link in self._links.values():
            link.close()
        self._links = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
