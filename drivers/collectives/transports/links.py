"""Links between ranks: a gradient (data) socket and an untagged control socket per
neighbour, set up from a rendezvous store, with errors that name the rank.

Data sockets carry float32 only (tagged `gradient_socket()`s when the NIC compresses,
plain sockets otherwise); everything else (lengths, dtypes, the abort notice) goes on
the control sockets, which are never tagged: the NIC would compress an integer as a
float. Every socket has a timeout, so a rank that stops answering makes its neighbours
raise instead of hanging, and a rank that dies closes its sockets, which its neighbours
see at once.

Trust model. A ring's listening ports are open to anyone who can reach the host, and
their addresses sit in the rendezvous store. Every control connection therefore proves,
in both directions, that it holds the job's secret (an HMAC challenge with fresh nonces:
the secret never crosses the connection), and a data connection is accepted only from
the address and port an authenticated control connection named. The secret is
INCEPTIONN_RING_SECRET when set (shared out of band: then even a process that can read
the store cannot join), else 32 random bytes that rank 0 publishes in the store: then
whoever can read the store is trusted, as torch.distributed trusts it (its own gloo and
NCCL connections are not authenticated). The proofs use a key derived from the secret
and the rendezvous prefix (`ring_key`), which names the hook state and, under torchrun,
the restart: a peer of an earlier incarnation of the job (a process left from before an
elastic restart) cannot prove itself even where the secret is shared out of band.
Refused: a process without the secret, a rank of another job or incarnation, a peer
claiming the wrong rank. Not covered: an attacker on the path
(the data is not encrypted; the NIC has to read it).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import selectors
import socket
import struct
import time

import numpy as np

from ... import sockets

__all__ = ["CollectiveError", "Collective", "Link", "Listener", "rendezvous", "DEFAULT_TIMEOUT",
           "job_secret", "ring_key", "SECRET_ENV"]

DEFAULT_TIMEOUT = 60.0
SECRET_ENV = "INCEPTIONN_RING_SECRET"
_NONCE = 16
# magic, rank, the rank it wants to reach, local port of its data connection, nonce
_HELLO = struct.Struct(f"!4sIIH{_NONCE}s")
_MAGIC = b"INCR"
_PROOF = struct.Struct(f"!{_NONCE}s32s")   # the acceptor's nonce and its proof
_ACCEPTED = b"\x01"


class CollectiveError(RuntimeError):
    """A peer failed, a connection dropped, or the ranks disagree; names the rank."""


def _plain_socket():
    """An untagged TCP socket with Nagle off: the collectives write a header, then
    floats, then wait for the peer's answer; with Nagle on, a small last write waits for
    the peer's delayed ACK (40 ms on Linux) on every call."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _mac(secret: bytes, role: bytes, *parts) -> bytes:
    return hmac.new(secret, role + b"|".join(parts), hashlib.sha256).digest()


def _ranks(a: int, b: int) -> bytes:
    return struct.pack("!II", a, b)


# A real peer sends its hello and proof within milliseconds of connecting: a control
# connection gets this long for the whole handshake, however its bytes trickle in.
HANDSHAKE_S = 5.0
# Unauthenticated control connections served at once; past it the one that sent the
# least, oldest first, is dropped (a real peer sends its hello at once).
MAX_PENDING = 16
# The kernel's queue of connections not yet accepted: room for a flood to sit in while
# this rank is busy connecting to its higher peers (the system caps it at somaxconn).
BACKLOG = 4096


class _Pending:
    """A control connection in its handshake: hello, then proof, read without blocking."""

    def __init__(self, conn, addr, deadline):
        self.conn, self.addr, self.deadline = conn, addr, deadline
        self.buf, self.want = bytearray(), _HELLO.size
        self.rank = self.port = self.nonce_a = self.nonce_c = None

    def progress(self):
        """What to drop first when too many are pending: the fewest bytes received (an
        idle connection before a real peer part-way through), then the oldest."""
        return (len(self.buf) + (_HELLO.size if self.rank is not None else 0), self.deadline)


class Listener:
    """Where a rank accepts its peers: a control port and a data port.

    Data connections carry floats from their first byte (a hello would shift every later
    float, and break the first-flight rule of send_floats), so a peer names its data
    connection in the hello on its control connection: by the data socket's local port,
    which it connects only once the handshake has succeeded. Accepted sockets inherit the
    listener's options, so the data listener is a gradient socket when the data is
    tagged (the MSS is fixed in the handshake).

    Hostile connections cannot stall the rendezvous: handshakes are served concurrently
    (one event loop over both ports and every pending connection), each within its own
    HANDSHAKE_S for hello and proof together, at most MAX_PENDING at once; a data
    connection that no authenticated peer named is closed as soon as it arrives, so idle
    connections never fill the data port's queue.
    """

    def __init__(self, host: str, *, compress: bool, mss: int, dscp: int):
        self.ctrl = _plain_socket()
        self.data = None
        try:
            self.data = (sockets.gradient_socket(mss=mss, dscp=dscp) if compress
                         else _plain_socket())
            for s in (self.ctrl, self.data):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((host, 0))
                s.listen(BACKLOG)
        except OSError as e:
            self.close()
            raise CollectiveError(f"cannot listen on {host}: {e}") from None
        self.address = f"{host}:{self.ctrl.getsockname()[1]}:{self.data.getsockname()[1]}"
        self.refused = 0          # connections that failed the handshake or were not named

    def accept(self, my_rank: int, ranks, secret: bytes, timeout: float) -> dict:
        """Accept an authenticated control and a data connection from each of `ranks`;
        {rank: (ctrl, data)}. A connection that fails the handshake, or is not named by
        an authenticated peer, is closed and counted in `refused`; the wait goes on until
        the deadline."""
        deadline = time.monotonic() + timeout
        ranks = set(ranks)
        ctrl: dict = {}                   # rank -> (socket, (address, data port))
        out: dict = {}
        pending: dict = {}                # socket -> _Pending
        sel = selectors.DefaultSelector()
        try:
            for lsock, what in ((self.ctrl, "ctrl"), (self.data, "data")):
                lsock.setblocking(False)
                sel.register(lsock, selectors.EVENT_READ, what)
            while len(out) < len(ranks):
                now = time.monotonic()
                for p in [p for p in pending.values() if p.deadline <= now]:
                    self._drop(p, pending, sel)
                if now >= deadline:
                    raise CollectiveError(
                        f"only {len(out)} of the connections from ranks {sorted(ranks)} "
                        f"arrived in time ({self.refused} other connections refused)")
                wake = min([deadline] + [p.deadline for p in pending.values()])
                # Pending connections first: a real peer's hello is read before a flood's
                # new connections can push it out.
                events = sorted(sel.select(max(0.0, wake - now)),
                                key=lambda e: isinstance(e[0].data, str))
                for key, _ in events:
                    if key.data == "ctrl":
                        self._take_ctrl(pending, sel, min(deadline, time.monotonic()
                                                          + HANDSHAKE_S),
                                        (my_rank, ranks, secret, ctrl, pending, sel))
                    elif key.data == "data":
                        self._take_data(ctrl, out)
                    else:
                        self._step(key.data, my_rank, ranks, secret, ctrl, pending, sel)
            for c, d in out.values():
                # The operations' timeout, as the connecting side has it; not what was
                # left of the rendezvous when the peer arrived.
                c.settimeout(timeout)
                d.settimeout(timeout)
        except BaseException:
            for c, _ in ctrl.values():
                c.close()
            for _, d in out.values():
                d.close()
            raise
        finally:
            for p in list(pending.values()):
                p.conn.close()
            sel.close()
        return out

    def _take_ctrl(self, pending, sel, handshake_deadline, peer):
        """Accept queued control connections into the handshake, MAX_PENDING at most per
        round, so that those already pending are read between rounds of a flood."""
        for _ in range(MAX_PENDING):
            if (got := _accept(self.ctrl)) is None:
                return
            conn, addr = got
            try:
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                conn.close()
                continue
            if len(pending) >= MAX_PENDING:
                self._drop(min(pending.values(), key=_Pending.progress), pending, sel)
            p = _Pending(conn, addr, handshake_deadline)
            pending[conn] = p
            sel.register(conn, selectors.EVENT_READ, p)
            self._step(p, *peer)        # a hello sent with the connect is there already

    def _take_data(self, ctrl, out):
        """Accept every queued data connection: kept if an authenticated peer named its
        address and port, else closed at once."""
        named = {where: rank for rank, (_, where) in ctrl.items()}
        while (got := _accept(self.data)) is not None:
            conn, addr = got
            rank = named.get(addr[:2])
            if rank is None or rank in out:
                self.refused += 1
                conn.close()
                continue
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                conn.close()
                continue
            out[rank] = (ctrl[rank][0], conn)

    def _drop(self, p, pending, sel):
        self.refused += 1
        del pending[p.conn]
        sel.unregister(p.conn)
        p.conn.close()

    def _step(self, p, my_rank, ranks, secret, ctrl, pending, sel):
        """Read what the pending connection sent; answer when its hello or proof is
        whole. A wrong hello or proof, or a closed connection, drops it."""
        if pending.get(p.conn) is not p:       # dropped earlier in this round
            return
        try:
            chunk = p.conn.recv(p.want - len(p.buf))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(p, pending, sel)
            return
        p.buf += chunk
        if len(p.buf) < p.want:
            return
        try:
            if p.rank is None:
                magic, rank, to, port, p.nonce_c = _HELLO.unpack(bytes(p.buf))
                if magic != _MAGIC or rank not in ranks or to != my_rank or rank in ctrl:
                    raise ValueError("not a hello to this rank")
                p.nonce_a = os.urandom(_NONCE)
                _send_small(p.conn, _PROOF.pack(p.nonce_a, _mac(
                    secret, b"A", p.nonce_c, p.nonce_a, _ranks(my_rank, rank))))
                p.rank, p.port, p.buf, p.want = rank, port, bytearray(), 32
                return
            if not hmac.compare_digest(bytes(p.buf), _mac(
                    secret, b"C", p.nonce_a, p.nonce_c, _ranks(p.rank, my_rank))):
                raise ValueError("a wrong proof")
            _send_small(p.conn, _ACCEPTED)
        except (OSError, ValueError):
            self._drop(p, pending, sel)
            return
        del pending[p.conn]
        sel.unregister(p.conn)
        p.conn.setblocking(True)
        ctrl[p.rank] = (p.conn, (p.addr[0], p.port))

    def close(self):
        for s in (self.ctrl, self.data):
            if s is not None:
                s.close()


def _accept(listener):
    """One queued connection of a non-blocking listener, or None when none is queued."""
    try:
        return listener.accept()
    except (BlockingIOError, InterruptedError):
        return None
    except OSError as e:
        raise CollectiveError(f"accepting connections failed: {e}") from None


def _send_small(conn, msg):
    """A few bytes on a fresh connection: they fit its empty send buffer at once."""
    if conn.send(msg) != len(msg):
        raise OSError("the peer does not read")


def _recv_raw(sock, n):
    """Exactly n bytes; EOFError on a closed stream, OSError / TimeoutError as raised."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def _recv_exact(sock, n, what):
    try:
        return _recv_raw(sock, n)
    except TimeoutError:
        raise CollectiveError(f"timed out waiting for {what}") from None
    except EOFError:
        raise CollectiveError(f"connection closed while waiting for {what}") from None
    except OSError as e:
        raise CollectiveError(f"connection lost while waiting for {what}: {e}") from None


def _connect_one(host, port, s, timeout):
    """Connect socket `s`, retrying while the port is not listening yet."""
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
        except OSError as e:
            s.close()
            raise CollectiveError(f"cannot connect to {host}:{port}: {e}") from None


def _connect(address: str, my_rank: int, peer: int, secret: bytes, *, compress: bool, mss: int,
             dscp: int, timeout: float):
    """(ctrl, data) sockets to rank `peer` listening at `address`, both ends proven. The
    data socket is bound first (the hello names its port) and connects only once the
    handshake has succeeded: the peer admits no data connection before that."""
    host, cport, dport = address.rsplit(":", 2)
    ctrl = _connect_one(host, int(cport), _plain_socket(), timeout)
    data = None
    try:
        data = sockets.gradient_socket(mss=mss, dscp=dscp) if compress else _plain_socket()
        data.bind((ctrl.getsockname()[0], 0))
        nonce_c = os.urandom(_NONCE)
        ctrl.sendall(_HELLO.pack(_MAGIC, my_rank, peer, data.getsockname()[1], nonce_c))
        nonce_a, proof = _PROOF.unpack(_recv_exact(ctrl, _PROOF.size, f"rank {peer}'s proof"))
        if not hmac.compare_digest(proof, _mac(secret, b"A", nonce_c, nonce_a,
                                               _ranks(peer, my_rank))):
            raise CollectiveError(f"the peer at {address} is not rank {peer} of this job: it "
                                  f"cannot prove the job's secret (refused)")
        ctrl.sendall(_mac(secret, b"C", nonce_a, nonce_c, _ranks(my_rank, peer)))
        if _recv_exact(ctrl, 1, f"rank {peer}'s verdict") != _ACCEPTED:
            raise CollectiveError(f"rank {peer} refused this rank's proof")
        _connect_one(host, int(dport), data, timeout)
        return ctrl, data
    except OSError as e:
        ctrl.close()
        if data is not None:
            data.close()
        raise CollectiveError(f"handshake with rank {peer} at {address} failed: {e}") from None
    except BaseException:
        ctrl.close()
        if data is not None:
            data.close()
        raise


class Link:
    """Control and data sockets with one peer, as seen from this rank."""

    def __init__(self, peer: int, ctrl, data):
        self.peer, self.ctrl, self.data = peer, ctrl, data
        self._hdr = bytearray(4)

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

    def send_frame(self, body) -> None:
        """A length-prefixed byte string on the data connection (coded values)."""
        self.send_frames([body])

    def send_frames(self, bodies) -> None:
        """send_frame of each body, in one send (one copy of a chunk's frames: fewer
        system calls, as a chunk is several frames)."""
        parts = []
        for b in bodies:
            parts += [struct.pack("!I", len(b)), b]
        self.send_wire(b"".join(parts))

    def send_wire(self, data) -> None:
        """Frames already laid out as send_frames sends them (each length-prefixed)."""
        try:
            self.data.sendall(data)
        except TimeoutError:
            raise CollectiveError(f"rank {self.peer} stopped reading (timeout)") from None
        except OSError as e:
            raise CollectiveError(f"rank {self.peer}: data connection lost: {e}") from None

    def recv_frame(self, limit: int) -> bytearray:
        """One frame of send_frame; longer than `limit` bytes is a protocol error."""
        what = f"coded values from rank {self.peer}"
        n = struct.unpack("!I", _recv_data(self.data, 4, what))[0]
        if n > limit:
            raise CollectiveError(f"rank {self.peer} sent a {n}-byte frame where at most "
                                  f"{limit} fit: the ranks disagree on the codec or chunking")
        return _recv_data(self.data, n, what)

    def recv_frame_into(self, buf: memoryview, limit: int) -> int:
        """One frame of send_frame read into `buf` as it came, its length first (the
        layout send_wire sends); returns the bytes read (4 + the frame's). A frame
        longer than `limit` bytes is a protocol error; `buf` must hold 4 + limit."""
        what = f"coded values from rank {self.peer}"
        _recv_data_into(self.data, buf[:4], what)
        n = struct.unpack("!I", buf[:4])[0]
        if n > limit:
            raise CollectiveError(f"rank {self.peer} sent a {n}-byte frame where at most "
                                  f"{limit} fit: the ranks disagree on the codec or chunking")
        _recv_data_into(self.data, buf[4:4 + n], what)
        return 4 + n

    def close(self):
        for s in (self.ctrl, self.data):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _recv_data(sock, n, what) -> bytearray:
    buf = bytearray(n)
    _recv_data_into(sock, memoryview(buf), what)
    return buf


def _recv_data_into(sock, view: memoryview, what) -> None:
    n, got = len(view), 0
    try:
        while got < n:
            m = sock.recv_into(view[got:], n - got)
            if m == 0:
                raise CollectiveError(f"connection closed while waiting for {what}")
            got += m
    except TimeoutError:
        raise CollectiveError(f"timed out waiting for {what}") from None
    except OSError as e:
        raise CollectiveError(f"connection lost while waiting for {what}: {e}") from None


def _store_get(store, key: str, timeout: float, what: str):
    """store.get(key), waiting at most `timeout` seconds (a torch Store's own get waits
    for the store's timeout, minutes by default, if a peer died before publishing)."""
    if hasattr(store, "wait"):
        try:
            store.wait([key], datetime.timedelta(seconds=timeout))
        except Exception as e:  # torch raises DistStoreError (a RuntimeError) on timeout
            raise CollectiveError(f"{what} did not appear within {timeout:g} s: {e}") from None
    try:
        value = store.get(key)
    except Exception as e:  # a store whose server went away
        raise CollectiveError(f"{what}: the store failed: {e}") from None
    return value.decode() if isinstance(value, bytes) else value


def job_secret(store, rank: int, prefix: str, timeout: float) -> bytes:
    """The job's secret: INCEPTIONN_RING_SECRET, or rank 0's random one from the store."""
    env = os.environ.get(SECRET_ENV)
    if env:
        return env.encode()
    key = f"{prefix}/secret"
    if rank == 0:
        store.set(key, os.urandom(32).hex())
    return bytes.fromhex(_store_get(store, key, timeout, "rank 0's job secret"))


def ring_key(secret: bytes, prefix: str) -> bytes:
    """The key the handshake proves: the job's secret bound to this rendezvous's prefix."""
    return _mac(secret, b"K", prefix.encode())


def rendezvous(store, rank: int, world: int, peers, *, host: str, prefix: str,
               compress: bool, mss: int, dscp: int, timeout: float,
               secret: bytes | None = None) -> dict[int, Link]:
    """Links to `peers` (ranks): a rank connects to higher ranks and accepts lower ones,
    so each pair has exactly one connection per channel. `store` is a torch.distributed
    Store or anything with set(key, value) and get(key) -> bytes."""
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not in 0..{world - 1}")
    listener = Listener(host, compress=compress, mss=mss, dscp=dscp)
    links = {}
    try:
        if secret is None:
            secret = job_secret(store, rank, prefix, timeout)
        secret = ring_key(secret, prefix)
        store.set(f"{prefix}/addr/{rank}", listener.address)
        higher = [p for p in peers if p > rank]
        lower = [p for p in peers if p < rank]
        for p in higher:
            addr = _store_get(store, f"{prefix}/addr/{p}", timeout, f"rank {p}'s address")
            links[p] = Link(p, *_connect(addr, rank, p, secret, compress=compress, mss=mss,
                                         dscp=dscp, timeout=timeout))
        if lower:
            for p, (ctrl, data) in listener.accept(rank, set(lower), secret, timeout).items():
                links[p] = Link(p, ctrl, data)
        return links
    except BaseException:
        for link in links.values():
            link.close()
        raise
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
