"""TorchRing over gloo on the CPU: the pipelined exchange (round i + 1 coded and posted
while round i is in flight) gives the same bits as the rounds run one after the other
and as a ring computed here in one process from golden's codec, for several buffers
(buckets) in a row, with many rounds per block, one round per block (where a round must
wait for the one before it) and blocks of unequal chunk counts; the bytes it counts
are those it sent."""

import pytest

torch = pytest.importorskip("torch")

from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)

# (values, chunk floats) per bucket: several rounds per block, one round per block, a
# block shorter than a chunk, blocks whose chunk counts differ, a tiny bucket.
BUCKETS = [(40_000, 3_000), (10_001, 50_000), (5, 2), (7_003, 1_000), (3, 100)]


def _values(rank, i, n):
    g = torch.Generator().manual_seed(1000 * i + rank)
    x = torch.randn(n, generator=g) * 10.0 ** -(2 + i % 3)
    x[::7] = 0.0                      # zero runs and the codec's every band
    return x


def _rings(rank, world, codec, k):
    from inceptionn.drivers.collectives.transports.torch_ring import TorchRing
    out = []
    for pipeline in (True, False):
        runs = []
        for i, (n, chunk) in enumerate(BUCKETS):
            ring = TorchRing(codec=codec, k=k, chunk=chunk, pipeline=pipeline)
            x = _values(rank, i, n)
            ring.allreduce(x)
            runs.append((x.view(torch.int32).tolist(), ring.bytes_sent, ring.payload_bytes,
                         ring.index_bytes))
        out.append(runs)
    return out


def _model(world, codec, k, i, n):
    """The ring's result computed here: golden's codec on every hop, block b's sum taken
    in ring order from its first sender, the owner's copy decoded as the others'."""
    import numpy as np

    from inceptionn import golden
    from inceptionn.drivers.collectives.communicator import block_bounds
    xs = [_values(r, i, n).numpy().copy() for r in range(world)]

    def code(v):
        return golden.unpack_groups(golden.pack_groups(v.view(np.uint32), k, codec), v.size,
                                    k, codec)[0].view(np.float32)
    out = np.empty(n, np.float32)
    for b, (lo, hi) in enumerate(block_bounds(n, world)):
        # block b starts at rank b (reduce-scatter step 0 sends block r), ends at b - 1
        acc = xs[b][lo:hi].copy()
        for s in range(1, world):
            r = (b + s) % world
            acc = code(acc) + xs[r][lo:hi]
        out[lo:hi] = code(acc)
    return out


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("codec,k", [("bounded", 10), ("paper", 7)])
def test_pipelined_ring_gives_the_same_bits(world, codec, k):
    import numpy as np
    res = spawn(_rings, world, codec, k, timeout=300)
    assert sorted(res) == list(range(world))
    for r, (out, _) in res.items():
        assert not isinstance(out, str), out
    piped = [res[r][0][0] for r in range(world)]
    plain = [res[r][0][1] for r in range(world)]
    for i, (n, _) in enumerate(BUCKETS):
        want = _model(world, codec, k, i, n).view(np.int32).tolist()
        for r in range(world):
            assert piped[r][i] == plain[r][i], (r, i)      # values and byte counts
            assert piped[r][i][0] == want, (r, i)
            assert piped[r][i][1] > piped[r][i][2] > 0     # headers and index counted too
