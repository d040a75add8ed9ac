"""The ring (Algorithm 1) and the worker-aggregator baseline over real TCP: exact sums in
a fixed order, bit-identical ranks, the golden roundtrip per hop, failures that reach
every rank, and the same numbers through the software NIC as emulated."""

import os
import threading
import time

import numpy as np
import pytest

import ranks
from torch.distributed import FileStore, HashStore

from inceptionn import golden
from inceptionn.drivers.collectives import (CollectiveError, Ring, SettingsMismatch,
                                            WorkerAggregator, block_bounds)
from inceptionn.drivers.collectives.codecs import ScaledCodec
from inceptionn.drivers.collectives.compressors.inceptionn_eb import EBCodec

CLASSES = {"ring": Ring, "wa": WorkerAggregator}


def _grads(p, n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 0.05, n).astype(np.float32) for _ in range(p)]


def _roundtrip(k, codec="bounded"):
    """The NumPy model's roundtrip (golden.api, compressors.inceptionn_eb)."""
    if not k:
        return lambda a: a
    if codec == "bounded":
        eb = EBCodec(k)
        return lambda a: eb.decode(eb.encode(a), a.size)
    return lambda a: golden.roundtrip(a, k, codec="paper")


def ring_reference(xs, k=None, codec="bounded"):
    """Algorithm 1 in NumPy: block b summed from rank b on, each hop through the
    roundtrip when k is given; the owner's result (rounded too) everywhere."""
    p, n = len(xs), xs[0].size
    rt = _roundtrip(k, codec)
    out = np.empty(n, np.float32)
    for b, (lo, hi) in enumerate(block_bounds(n, p)):
        acc = xs[b][lo:hi].copy()
        for j in range(1, p):
            acc = rt(acc) + xs[(b + j) % p][lo:hi]
        out[lo:hi] = rt(acc)
    return out


def wa_reference(xs, k=None, codec="bounded"):
    rt = _roundtrip(k, codec)
    acc = xs[0].copy()
    for x in xs[1:]:
        acc = acc + rt(x)
    return acc


def _run(kind, xs, *, store=None, call=None, **kw):
    """Every rank in a thread; (results, errors by rank)."""
    p = len(xs)
    store = store or HashStore()
    outs = [None] * p

    def body(r):
        opts = dict(kw)
        if "host" in opts and opts["host"] is None:
            opts["host"] = f"10.77.0.{r + 1}"     # a bridge host's address
        make = lambda: CLASSES[kind].from_store(store, r, p, **opts)  # noqa: E731
        coll = call(r, make) if call else make()
        with coll:
            y = xs[r].copy()
            coll.allreduce(y)
            outs[r] = y

    return outs, ranks.run_ranks(p, body)


def _same(outs):
    return all(np.array_equal(outs[0].view(np.uint32), o.view(np.uint32)) for o in outs)


@pytest.mark.parametrize("kind", ["ring", "wa"])
@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("n", [0, 2, 5, 4099, 100_003])
def test_exact_sum_in_fixed_order_on_every_rank(kind, p, n):
    xs = _grads(p, n, seed=p * 7 + n)
    outs, errs = _run(kind, xs, chunk=1000)
    assert not errs, errs
    want = (ring_reference if kind == "ring" else wa_reference)(xs)
    assert _same(outs + [want])


@pytest.mark.parametrize("codec", ["paper", "bounded"])
@pytest.mark.parametrize("p", [2, 3, 4])
def test_software_wire_sends_the_codec_bytes_and_equals_emulation(codec, p):
    """wire="software": every hop carries the group bytes and the receiver decodes them;
    the numbers are the emulation's (and the NumPy model's) bit for bit, and the bytes
    on the data connections are the coded ones, far fewer than float32's."""
    xs = _grads(p, 60_001, seed=p)
    want = ring_reference(xs, 10, codec)
    got = {}
    for wire in ("emulate", "software"):
        sent = {}

        def keep(r, make):
            coll = make()
            sent[r] = coll
            return coll

        outs, errs = _run("ring", xs, wire=wire, k=10, codec=codec, chunk=4096,
                          codec_threads=3, call=keep)
        assert not errs, errs
        got[wire] = sum(c.bytes_sent for c in sent.values())
        assert _same(outs + [want]), wire
    floats = 4 * 60_001 * 2 * (p - 1)
    assert got["emulate"] == floats
    assert got["software"] < 0.5 * floats, got   # N(0, 0.05) values at 2^-10: 1-2 bytes each


@pytest.mark.parametrize("kind", ["ring", "wa"])
@pytest.mark.parametrize("k", [10, 6])
def test_emulated_compression_is_the_roundtrip_on_every_hop(kind, k):
    xs = _grads(4, 50_001, seed=k)
    outs, errs = _run(kind, xs, emulate=True, k=k, chunk=4096)
    assert not errs, errs
    want = (ring_reference if kind == "ring" else wa_reference)(xs, k)
    assert _same(outs + [want])
    assert not _same([outs[0], (ring_reference if kind == "ring" else wa_reference)(xs)])


@pytest.mark.parametrize("emulate", [False, True])
def test_the_papers_sequential_wa_replies_only_once_all_is_summed(emulate):
    """schedule="sequential": the same sums as the pipelined WA, and the aggregator sends
    no reply byte until it has received every chunk of every worker (recorded as the
    bytes it had sent at each receive; the pipelined WA replies after the first chunk)."""
    xs = _grads(4, 50_001, seed=3)
    seen = []

    def watch(r, make):
        coll = make()
        if r == 0:
            for link in coll._links.values():
                recv = link.recv_floats_into

                def counted(out, recv=recv):
                    seen.append(coll.bytes_sent)
                    recv(out)
                link.recv_floats_into = counted
        return coll

    outs, errs = _run("wa", xs, emulate=emulate, k=10, chunk=4096, schedule="sequential",
                      call=watch)
    assert not errs, errs
    assert _same(outs + [wa_reference(xs, 10 if emulate else None)])
    assert len(seen) == 3 * 13 and set(seen) == {0}, sorted(set(seen))[:5]
    with pytest.raises(ValueError, match="schedule"):
        WorkerAggregator(0, 2, {}, schedule="overlapped")


def test_bad_arguments_are_clear_errors():
    xs = _grads(3, 1000)
    xs[2] = xs[2][:999]
    outs, errs = _run("ring", xs)
    assert set(errs) == {0, 1, 2}
    assert all(isinstance(e, ValueError) and "lengths differ" in str(e) for e in errs.values())
    outs, errs = _run("wa", xs)
    assert set(errs) == {0, 1, 2} and all(isinstance(e, ValueError) for e in errs.values())
    with Ring(0, 1, {}) as ring:
        with pytest.raises(ValueError, match="float32"):
            ring.allreduce(np.zeros(4, np.float64))
        with pytest.raises(ValueError, match="1-D"):
            ring.allreduce(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="exclude"):
        Ring(0, 1, {}, compress=True, emulate=True)


def _rank_proc(kind, path, r, p, die, n, q):
    t0 = time.monotonic()
    try:
        # ring-scaled: the hook's codec, whose chunks are coded in one call (fast_frames)
        extra = ({"wire": "software", "codec": "bounded"} if kind == "ring-software" else
                 {"wire": "software", "codec": ScaledCodec(10)} if kind == "ring-scaled"
                 else {})
        coll = CLASSES[kind.split("-")[0]].from_store(FileStore(path, p), r, p, timeout=5.0,
                                                      chunk=1 << 14, **extra)
        x = np.ones(n, np.float32)
        if die == "exit":
            os._exit(3)                       # killed: its sockets close
        if die == "hang":
            time.sleep(30)                    # alive, silent
        t0 = time.monotonic()
        coll.allreduce(x)
        q.put((r, "ok", time.monotonic() - t0))
    except Exception as e:  # reported to the test
        q.put((r, f"{type(e).__name__}: {e}", time.monotonic() - t0))


# make test: a dead rank on each exchange (about 4 s each); the silent ranks wait out
# their timeouts and the socket ring's dead rank takes 9 s: make test-long.
_LONG = pytest.mark.long


@pytest.mark.parametrize("kind,how", [pytest.param("ring", "exit", marks=_LONG),
                                      pytest.param("ring", "hang", marks=_LONG), ("wa", "exit"),
                                      pytest.param("wa", "hang", marks=_LONG),
                                      ("ring-software", "exit"), ("ring-scaled", "exit")])
def test_a_dead_or_silent_rank_makes_every_other_rank_raise(kind, how, tmp_path):
    p, victim = 4, 2
    ctx = ranks.context()
    q = ctx.Queue()
    path = str(tmp_path / "store")
    procs = [ctx.Process(target=_rank_proc,
                         args=(kind, path, r, p, how if r == victim else None, 1 << 20, q))
             for r in range(p)]
    for pr in procs:
        pr.start()
    got = {}
    try:
        for _ in range(p - 1):
            r, status, took = q.get(timeout=90)
            got[r] = (status, took)
    finally:
        for pr in procs:
            pr.kill()
            pr.join()
    assert set(got) == {r for r in range(p) if r != victim}, got
    for r, (status, took) in got.items():
        assert status.startswith("CollectiveError"), (r, status)
        assert took < 30, (r, took)            # the 5 s timeout, not forever


class _Garbage:
    """A rank's coder gone wrong: every piece of the chunks it sends before the owner's
    keep is a frame of one scale byte and no groups (what a rank with another codec, or
    a broken one, might send); everything else is the real codec's."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode_frames(self, values, piece, keep=False, **kw):
        if keep:
            return self.inner.encode_frames(values, piece, keep=keep, **kw)
        return np.frombuffer(b"\x00\x00\x00\x01\x80" * -(-values.size // piece),
                             np.uint8).copy()

    def encode(self, values):
        return b"\x80"


@pytest.mark.parametrize("codec", ["bounded", "scaled"])
def test_frames_that_do_not_decode_fail_every_rank_naming_the_sender(codec):
    """Rank 1 sends frames that do not decode: rank 2 raises a CollectiveError that
    names rank 1, and the others a CollectiveError too, within the timeout; no rank
    hangs on a chunk it will never get."""
    p, bad = 4, 1

    def corrupt(r, make):
        ring = make()
        if r == bad:
            if ring._frames is not None:      # the scaled codec: a chunk in one call
                ring._frames = _Garbage(ring._frames)
            else:
                ring.codec = _Garbage(ring.codec)
        return ring

    t0 = time.monotonic()
    outs, errs = _run("ring", _grads(p, 200_000), wire="software", k=10, chunk=1 << 14,
                      codec=ScaledCodec(10) if codec == "scaled" else "bounded",
                      timeout=5.0, call=corrupt)
    assert time.monotonic() - t0 < 30
    assert set(errs) == set(range(p)), errs
    assert all(isinstance(e, CollectiveError) for e in errs.values()), errs
    assert f"rank {bad} sent bytes that do not decode" in str(errs[bad + 1]), errs


@pytest.mark.skipif(__import__("inceptionn.drivers.netns", fromlist=["x"]).netns_available()
                    is not None, reason="no network namespaces (needs root)")
@pytest.mark.parametrize("kind", ["ring", "wa"])
def test_through_the_software_nic_equals_emulation(kind):
    """Four ranks in four namespaces, data on tagged sockets through the bridge's
    engines: the same bits as emulate=True, and the wire carries compressed frames."""
    from inceptionn.drivers.bridge import Bridge
    xs = _grads(4, 300_001, seed=11)
    with Bridge(4, mtu=9000, k=10) as br:
        outs, errs = _run(kind, xs, store=HashStore(), compress=True, k=10, mss=8948,
                          call=lambda r, make: br.call(r, make), host=None)
        c = br.counters()
    assert not errs, errs
    want = (ring_reference if kind == "ring" else wa_reference)(xs, 10)
    assert _same(outs + [want])
    if kind == "ring":    # the software wire: the same bits without a NIC
        soft, errs = _run(kind, xs, wire="software", k=10, chunk=8192)
        assert not errs, errs
        assert _same(outs + soft)
    assert all(p["misaligned"] == 0 for p in c)
    senders = range(4) if kind == "ring" else range(1, 4)
    assert all(c[r]["tx_compressed"] > 0 for r in senders)
    if kind == "wa":
        assert c[0]["tx_compressed"] == 0      # the aggregator's replies are untagged


@pytest.mark.parametrize("kind", ["ring", "wa"])
def test_every_connection_has_nagle_off(kind):
    """A call ends with small writes answered by the peer: with Nagle on, each waits for
    a delayed ACK (40 ms per call on Linux, 10x the call at 4 ranks and 4096 floats)."""
    import socket

    def check(r, make):
        coll = make()
        for link in coll._links.values():
            for s in (link.ctrl, link.data):
                assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), (r, link.peer)
        return coll

    outs, errs = _run(kind, _grads(3, 10), call=check)
    assert not errs, errs


def test_accepted_connections_get_the_whole_timeout(monkeypatch):
    """A late peer's connections wait, on the accepting side too, the full timeout per
    operation, not what was left of the rendezvous when the peer arrived."""
    from inceptionn.drivers.collectives.transports.links import SECRET_ENV
    monkeypatch.setenv(SECRET_ENV, "a shared secret")   # rank 1 need not wait for rank 0's
    store, rings, errs = HashStore(), {}, {}

    def body(r, delay):
        time.sleep(delay)
        try:
            rings[r] = Ring.from_store(store, r, 2, timeout=4.0)
        except Exception as e:  # collected for the test
            errs[r] = e

    # Rank 1 accepts rank 0, which arrives 2 s into rank 1's 4 s rendezvous.
    ts = [threading.Thread(target=body, args=(0, 2.0)), threading.Thread(target=body, args=(1, 0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    try:
        assert not errs, errs
        link = rings[1]._links[0]
        assert link.ctrl.gettimeout() == link.data.gettimeout() == 4.0
    finally:
        for ring in rings.values():
            ring.close()


@pytest.mark.parametrize("kind", ["ring", "wa"])
def test_a_rank_that_never_joins_fails_the_others_within_the_timeout(kind):
    """Rank 1 dies before publishing its address: rank 0 (which connects to it) raises
    after the collective's timeout, not after the store's own (minutes)."""
    store, errs = HashStore(), {}

    def body():
        try:
            CLASSES[kind].from_store(store, 0, 2, timeout=1.0).close()
        except Exception as e:  # collected for the test
            errs[0] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "rank 0 still waits for rank 1"
    assert isinstance(errs.get(0), CollectiveError) and "rank 1" in str(errs[0]), errs


def test_a_failure_at_setup_is_a_collective_error_on_every_rank():
    """Rank 1 cannot listen on its address (not this host's): a CollectiveError there at
    once, not a raw OSError with its sockets left open, and on rank 0, which waits for
    rank 1, a CollectiveError within the timeout."""
    store, errs = HashStore(), {}

    def body(r):
        try:
            Ring.from_store(store, r, 2, timeout=2.0,
                            host="192.0.2.1" if r == 1 else "127.0.0.1").close()
        except Exception as e:  # collected for the test
            errs[r] = e

    ts = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert set(errs) == {0, 1}, errs
    assert all(type(e) is CollectiveError for e in errs.values()), errs
    assert "192.0.2.1" in str(errs[1]) and "rank 1" in str(errs[0]), errs


def _published(store, key):
    import datetime
    store.wait([key], datetime.timedelta(seconds=30))
    host, cport, dport = store.get(key).decode().rsplit(":", 2)
    return host, int(cport), int(dport)


def test_a_peer_without_the_jobs_secret_is_refused(monkeypatch):
    """A process that read rank 1's address from the store connects first, claiming to
    be rank 0, with a wrong proof: refused (closed, never accepted); the real rank 0
    then joins and the sum is right. (The secret is shared out of band here, so rank 1
    is listening before rank 0 starts.)"""
    import socket
    import struct
    monkeypatch.setenv("INCEPTIONN_RING_SECRET", "out-of-band")
    store, prefix = HashStore(), "inceptionn/ring"
    xs = _grads(2, 1000)
    outs, errs, ready = [None, None], {}, threading.Event()

    def rank(r):
        try:
            if r == 0:
                ready.wait(30)
            with Ring.from_store(store, r, 2, timeout=10.0) as ring:
                y = xs[r].copy()
                ring.allreduce(y)
                outs[r] = y
        except Exception as e:  # collected for the test
            errs[r] = e

    ts = [threading.Thread(target=rank, args=(r,), daemon=True) for r in range(2)]
    import json
    store.set(f"{prefix}/settings/0", json.dumps(Ring(0, 2, {}).settings()))  # passes the check
    ts[1].start()
    host, cport, dport = _published(store, f"{prefix}/addr/1")
    data = socket.create_connection((host, dport))
    ctrl = socket.create_connection((host, cport))
    ctrl.sendall(struct.pack("!4sIIH16s", b"INCR", 0, 1, data.getsockname()[1], bytes(16)))
    ctrl.settimeout(10)
    assert len(ctrl.recv(48)) == 48                  # rank 1's challenge
    ctrl.sendall(bytes(32))                          # a proof without the secret
    assert ctrl.recv(1) == b"", "rank 1 accepted a peer without the secret"
    ctrl.close()
    data.close()
    ts[0].start()
    ready.set()
    for t in ts:
        t.join(30)
    assert not errs, errs
    assert _same(outs + [ring_reference(xs)])


def test_a_listener_without_the_jobs_secret_is_not_joined():
    """An impostor listens where rank 1's address points: rank 0 refuses it, naming it."""
    import socket
    store, prefix = HashStore(), "inceptionn/ring"
    lis = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    store.set(f"{prefix}/addr/1", f"127.0.0.1:{lis[0].getsockname()[1]}:"
                                  f"{lis[1].getsockname()[1]}")
    mine = Ring(0, 2, {}).settings()
    import json
    store.set(f"{prefix}/settings/1", json.dumps(mine))
    errs = {}

    def impostor():
        conn, _ = lis[0].accept()
        conn.recv(64)
        conn.sendall(bytes(48))                      # nonce and a proof it cannot make
        conn.recv(64)
        conn.close()

    t = threading.Thread(target=impostor, daemon=True)
    t.start()
    try:
        Ring.from_store(store, 0, 2, timeout=5.0).close()
    except Exception as e:  # collected for the test
        errs[0] = e
    t.join(10)
    for s in lis:
        s.close()
    assert isinstance(errs.get(0), CollectiveError) and "not rank 1" in str(errs[0]), errs


def test_ranks_with_different_settings_are_refused_on_every_rank():
    """Rank 2 at 2^-6 among ranks at 2^-10: the same error on every rank, naming the
    setting and the ranks (the per-call check compares only buffer lengths)."""
    store, errs = HashStore(), {}

    def body(r):
        try:
            Ring.from_store(store, r, 4, wire="software", codec="bounded",
                            k=6 if r == 2 else 10, timeout=10.0).close()
        except Exception as e:  # collected for the test
            errs[r] = e

    ts = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert set(errs) == {0, 1, 2, 3}, errs
    for e in errs.values():
        assert isinstance(e, SettingsMismatch), e
        assert "error_bound_log2: ranks 0,1,3 -10; rank 2 -6" in str(e), e


def test_codec_threads_follow_the_processs_cpu_affinity():
    from inceptionn.drivers.collectives.transports.socket_ring import default_codec_threads
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    mask = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(mask)})
        assert default_codec_threads() == 1
    finally:
        os.sched_setaffinity(0, mask)
    assert default_codec_threads() == max(1, min(4, len(mask)))
