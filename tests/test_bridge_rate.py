"""The bridge's rate limit (drivers/nic_workers.py): a token bucket per port on the wire
bytes, kept by the compiled switch's workers, so that a rate-limited wire no longer
sends every frame through the one-thread Python loop (which made the compressed
exchanges of `make bench-collectives` CPU-bound: docs/benchmarks.md).

Four hosts stream to their ring neighbour at once through compressing ports at
0.05 Gb/s. Asserted on counts and on the wire time the bytes themselves need: the
compiled switch runs; no stream finishes before its port's wire time (the pacing never
runs ahead of the rate by more than its 5 ms bucket); nothing is lost while the frames
wait in the hosts' TAP queues (no TAP drop, no fast retransmit: a loss probe or a
timeout would be timing, which load moves, so they are not asserted); every value
arrives as the codec's roundtrip.

Three hosts stream to one at once: the link into that host has the same rate, so the
three together cannot finish before the one downlink's wire time for all their bytes
(less the bucket and a batch per sender: a lower bound on wall time, which load can
only lengthen; without the downlink's pacing they finish in about a third of it).
"""

import json
import threading
import time

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import stream_floats

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

RATE = 0.05          # Gb/s per port
HOSTS = 4
# Gradient-like values (most below 2^-7): they compress about 5x, as real gradients do.
X = np.random.default_rng(1).normal(0, 2e-3, 1 << 20).astype(np.float32)


def _losses(br, i):
    """Host i's frames its TAP dropped and its TCP's fast retransmits (losses only)."""
    link = json.loads(br.run(i, ["ip", "-s", "-j", "link", "show", br.ifnames[i]]).stdout)
    lines = br.run(i, ["cat", "/proc/net/netstat"]).stdout.splitlines()
    ext = {}
    for head, vals in zip(lines[0::2], lines[1::2]):
        ext.update(zip(head.split()[1:], map(int, vals.split()[1:])))
    return link[0]["stats64"]["tx"]["dropped"], ext["TCPFastRetrans"]


def _streams(br, pairs, x):
    """Stream x from every src to its dst in pairs at once; results by src."""
    results, errors = {}, []

    def stream(i, j):
        try:
            results[i] = stream_floats(br, i, j, x, port=5100 + i)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=stream, args=ij) for ij in pairs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _wire(before, after, i):
    """Port i's wire bytes between two counter readings, with 24 bytes a frame of
    preamble, FCS and gap."""
    return (after[i]["to_wire_bytes"] - before[i]["to_wire_bytes"]
            + 24 * (after[i]["to_wire_frames"] - before[i]["to_wire_frames"]))


def test_a_rate_limited_compressed_ring_runs_compiled_at_its_rate():
    with Bridge(HOSTS, mtu=9000, k=10, rate_gbps=RATE) as br:
        assert br.switch == "compiled"
        losses0 = [_losses(br, i) for i in range(HOSTS)]
        before = br.counters()
        results = _streams(br, {i: (i + 1) % HOSTS for i in range(HOSTS)}, X)
        after = br.counters()
        losses = [_losses(br, i) for i in range(HOSTS)]
    want = golden.roundtrip(X, 10)
    for i, res in sorted(results.items()):
        assert np.array_equal(res.received, want), f"host {i + 1} received other values"
        wire = _wire(before, after, i)
        assert X.nbytes / wire > 3, f"port {i} compressed only {X.nbytes / wire:.2f}x"
        # The port's wire time, less the bucket's 5 ms and the handshake's frames.
        floor = 0.95 * wire * 8 / (RATE * 1e9) - 0.005
        assert res.seconds >= floor, f"port {i} ran ahead of its rate: {res.seconds:.3f} s " \
                                     f"for {wire} wire bytes ({floor:.3f} s at {RATE} Gb/s)"
        assert after[i]["host_queue_drops"] == 0
    assert losses == losses0, f"(TAP drops, fast retransmits) per host: {losses0} -> {losses}"


def test_ports_sending_to_one_host_share_its_downlink():
    x = X[: 1 << 19]
    with Bridge(HOSTS, mtu=9000, k=10, rate_gbps=RATE) as br:
        assert br.switch == "compiled"
        before = br.counters()
        t0 = time.perf_counter()
        results = _streams(br, {i: 0 for i in range(1, HOSTS)}, x)
        wall = time.perf_counter() - t0
        after = br.counters()
    want = golden.roundtrip(x, 10)
    for i, res in sorted(results.items()):
        assert np.array_equal(res.received, want), f"host 0 received other values from {i}"
    wire = sum(_wire(before, after, i) for i in range(1, HOSTS))
    # The downlink's wire time for all three streams, less its bucket (5 ms) and one batch
    # per sender (a batch is delivered before it is charged; at most 5 ms of wire each).
    floor = 0.95 * wire * 8 / (RATE * 1e9) - 0.005 * HOSTS
    assert wall >= floor, f"{HOSTS - 1} ports put {wire} wire bytes into host 0 in {wall:.3f} s " \
                          f"(its downlink needs {floor:.3f} s at {RATE} Gb/s)"
    assert after[0]["host_queue_drops"] == 0
