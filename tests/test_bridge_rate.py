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
"""

import json
import threading

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


def test_a_rate_limited_compressed_ring_runs_compiled_at_its_rate():
    with Bridge(HOSTS, mtu=9000, k=10, rate_gbps=RATE) as br:
        assert br.switch == "compiled"
        losses0 = [_losses(br, i) for i in range(HOSTS)]
        before = br.counters()
        results, errors = [None] * HOSTS, []

        def stream(i):
            try:
                results[i] = stream_floats(br, i, (i + 1) % HOSTS, X, port=5100 + i)
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=stream, args=(i,)) for i in range(HOSTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        after = br.counters()
        losses = [_losses(br, i) for i in range(HOSTS)]
    want = golden.roundtrip(X, 10)
    for i, res in enumerate(results):
        assert np.array_equal(res.received, want), f"host {i + 1} received other values"
        wire = (after[i]["to_wire_bytes"] - before[i]["to_wire_bytes"]
                + 24 * (after[i]["to_wire_frames"] - before[i]["to_wire_frames"]))
        assert X.nbytes / wire > 3, f"port {i} compressed only {X.nbytes / wire:.2f}x"
        # The port's wire time, less the bucket's 5 ms and the handshake's frames.
        floor = 0.95 * wire * 8 / (RATE * 1e9) - 0.005
        assert res.seconds >= floor, f"port {i} ran ahead of its rate: {res.seconds:.3f} s " \
                                     f"for {wire} wire bytes ({floor:.3f} s at {RATE} Gb/s)"
        assert after[i]["host_queue_drops"] == 0
    assert losses == losses0, f"(TAP drops, fast retransmits) per host: {losses0} -> {losses}"
