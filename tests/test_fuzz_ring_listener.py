"""Hostile local processes against the ring's listener (drivers/collectives/transports/links.py):
a hello sent one byte at a time, idle floods of both ports, garbage, a handshake replayed
from an earlier job, and random bytes from many clients. Each time the real ranks still
form their links within the timeout, and the rendezvous time with the attack is printed
beside the time without it (measured in the same run)."""

import os
import socket
import struct
import threading
import time

import pytest
from fuzzing import fuzz_settings
from hypothesis import example, given
from hypothesis import strategies as st

from inceptionn.drivers.collectives.transports import LocalStore
from inceptionn.drivers.collectives.transports import links as T

TIMEOUT = 6.0        # the old listener took > 6 s for each attack below (75 s for the slow hello)
SECRET = b"this job's secret"


_Store = LocalStore


class _Job:
    """Two ranks: rank 1 listens (started first), rank 0 connects when told to."""

    def __init__(self):
        self.store, self.links, self.errs = _Store(), {}, {}
        self.t1 = threading.Thread(target=self._rank, args=(1,), daemon=True)
        self.t1.start()
        self.store.wait(["job/addr/1"], _Delta(30))
        host, cport, dport = self.store.get("job/addr/1").decode().rsplit(":", 2)
        self.host, self.cport, self.dport = host, int(cport), int(dport)

    def _rank(self, r):
        try:
            self.links[r] = T.rendezvous(self.store, r, 2, [1 - r], host="127.0.0.1",
                                         prefix="job", compress=False, mss=1460, dscp=10,
                                         timeout=TIMEOUT, secret=SECRET)
        except Exception as e:  # collected for the test
            self.errs[r] = e

    def finish(self):
        """Start rank 0; (seconds until both ranks hold their links); the links work."""
        t0 = time.monotonic()
        self._rank(0)
        self.t1.join(TIMEOUT + 10)
        took = time.monotonic() - t0
        assert not self.t1.is_alive(), "rank 1 still waits"
        assert not self.errs, self.errs
        a, b = self.links[0][1], self.links[1][0]
        a.send_msg({"hello": 1})
        assert b.recv_msg() == {"hello": 1}
        for ls in self.links.values():
            for link in ls.values():
                link.close()
        return took


class _Delta:
    def __init__(self, s):
        self.s = s

    def total_seconds(self):
        return self.s


def _connect(port, n=1, into=None):
    """n connected sockets (appended to `into` as they connect, so that a failure part-way
    leaves none unclosed with the caller)."""
    out = [] if into is None else into
    for _ in range(n):
        s = socket.socket()
        out.append(s)
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
    return out


def _hello(rank=0, to=1, port=4242, nonce=b"\x01" * 16):
    return struct.pack("!4sIIH16s", b"INCR", rank, to, port, nonce)


class _Trickle(threading.Thread):
    """A valid hello, one byte every `every` seconds (the old listener waited up to 5 s
    for each byte, one connection at a time)."""

    def __init__(self, port, every=0.4):
        super().__init__(daemon=True)
        self.sock, self.every, self.stop = _connect(port)[0], every, threading.Event()

    def run(self):
        for b in _hello():
            if self.stop.wait(self.every):
                return
            try:
                self.sock.send(bytes([b]))
            except OSError:
                return


def _baseline():
    return _Job().finish()


def _report(name, took, base):
    print(f"\nrendezvous with {name}: {took * 1e3:.0f} ms (without: {base * 1e3:.0f} ms, "
          f"timeout {TIMEOUT:g} s)")


def test_a_hello_one_byte_at_a_time_does_not_hold_the_rendezvous():
    base = _baseline()
    job = _Job()
    slow = [_Trickle(job.cport) for _ in range(3)]
    for t in slow:
        t.start()
    time.sleep(0.5)
    try:
        took = job.finish()
    finally:
        for t in slow:
            t.stop.set()
            t.sock.close()
    _report("3 trickled hellos", took, base)


def test_idle_floods_of_both_ports_do_not_stop_the_ring():
    """More idle control connections than MAX_PENDING and more idle data connections
    than the old listen(64): the real peer is still served."""
    base = _baseline()
    job = _Job()
    idle = _connect(job.cport, 3 * T.MAX_PENDING) + _connect(job.dport, 200)
    time.sleep(0.3)
    try:
        took = job.finish()
    finally:
        for s in idle:
            s.close()
    _report(f"{len(idle)} idle connections", took, base)


def test_a_flood_while_the_peer_connects_does_not_push_it_out():
    """Idle control connections keep arriving, far more than MAX_PENDING, while rank 0
    connects: the pending connection dropped for a new one is the one that sent least,
    never the real peer part-way through its handshake."""
    base = _baseline()
    job = _Job()
    stop, socks = threading.Event(), []

    def flood():
        while not stop.is_set() and len(socks) < 2000:
            try:
                _connect(job.cport, 10, into=socks)
            except OSError:
                return

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    time.sleep(0.2)
    try:
        took = job.finish()
    finally:
        stop.set()
        t.join(10)
        for s in socks:
            s.close()
    _report(f"a flood of {len(socks)} idle connections under way", took, base)


def test_garbage_and_a_replayed_handshake_are_refused():
    """Garbage on both ports, a wrong rank, and the hello and proof of an earlier job's
    rank 0 replayed (its proof answered another nonce, under another secret)."""
    base = _baseline()
    job = _Job()
    socks = _connect(job.cport, 3) + _connect(job.dport, 1)
    socks[0].sendall(os.urandom(1024))
    socks[1].sendall(_hello(rank=7))
    old_nonce_a = b"\x02" * 16
    replay = T._mac(b"an earlier job's secret", b"C", old_nonce_a, b"\x01" * 16,
                    T._ranks(0, 1))
    socks[2].sendall(_hello())
    socks[3].sendall(b"\xff" * 1000)
    try:
        socks[2].settimeout(5)
        assert len(socks[2].recv(48)) == 48          # the challenge, with a fresh nonce
        socks[2].sendall(replay)
        assert socks[2].recv(1) == b"", "a replayed proof was accepted"
        took = job.finish()
    finally:
        for s in socks:
            s.close()
    _report("garbage and a replay", took, base)


@pytest.mark.parametrize("attack", ["trickle", "flood"])
def test_a_peer_that_never_joins_is_an_error_within_the_timeout(attack):
    """Only attackers connect: rank 1 raises a CollectiveError at its timeout, not later."""
    store = _Store()
    errs = {}

    def rank1():
        try:
            T.rendezvous(store, 1, 2, [0], host="127.0.0.1", prefix="job", compress=False,
                         mss=1460, dscp=10, timeout=2.0, secret=SECRET)
        except Exception as e:  # collected for the test
            errs[1] = e

    t0 = time.monotonic()
    t = threading.Thread(target=rank1, daemon=True)
    t.start()
    store.wait(["job/addr/1"], _Delta(30))
    _, cport, dport = store.get("job/addr/1").decode().rsplit(":", 2)
    if attack == "trickle":
        tr = _Trickle(int(cport), every=0.3)
        tr.start()
        socks = [tr.sock]
    else:
        socks = _connect(int(cport), 30) + _connect(int(dport), 100)
    t.join(10)
    took = time.monotonic() - t0
    for s in socks:
        s.close()
    assert not t.is_alive()
    assert isinstance(errs.get(1), T.CollectiveError) and "arrived in time" in str(errs[1])
    print(f"\nrank 1 alone with a {attack}: raised after {took:.2f} s (timeout 2 s)")


_client = st.tuples(st.sampled_from(["ctrl", "data"]),
                    st.one_of(st.binary(max_size=200),
                              st.builds(lambda r, to, tail: _hello(rank=r, to=to) + tail,
                                        st.integers(0, 3), st.integers(0, 3),
                                        st.binary(max_size=40))),
                    st.booleans())


@fuzz_settings(8)
@given(clients=st.lists(_client, max_size=12))
@example(clients=[("ctrl", _hello(), False)] * 12)
@example(clients=[("data", b"", False)] * 12)
def test_random_clients_never_stop_the_ring(clients):
    """Clients on either port send bytes (random, or a hello with a random rank and
    tail), then stay or leave; the real ranks form their links all the same."""
    job = _Job()
    socks = []
    for port, data, close in clients:
        s = _connect(job.cport if port == "ctrl" else job.dport)[0]
        try:
            s.sendall(data)
        except OSError:
            pass
        if close:
            s.close()
        else:
            socks.append(s)
    try:
        job.finish()
    finally:
        for s in socks:
            s.close()
