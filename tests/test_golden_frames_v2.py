"""Frames of wire format version 2 (docs/wire-format.md section 8): the TX codec select
and its k range, RX accepting both versions by the shim, the per-version counters, a
receiver that knows only version 1, and RX's version-2 acceptance rule against foreign
DSCP-10 payloads that merely look like a shim. Version 2 is no longer the default: the
frames here name it (TX ``version=2``, RX ``versions``)."""

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from inceptionn import golden
from inceptionn.golden import Counters, packet_matcher, rx_frame, tx_frame


def gradients(nbytes, seed=0, scale=1e-2):
    rng = np.random.default_rng(seed)
    vals = rng.normal(0, scale, nbytes // 4).astype(np.float32).tobytes()
    return vals + bytes(rng.integers(0, 256, nbytes % 4, dtype=np.uint8))


def frame(payload, proto="tcp", tos=0x28):
    l4 = TCP(sport=4000, dport=5000, seq=7, flags="PA") if proto == "tcp" else \
        UDP(sport=4000, dport=5000)
    return bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=tos) / l4 / Raw(payload))


def test_tx_version_2_and_paper_one_argument_away():
    f = frame(gradients(1000))
    p = packet_matcher(f).payload_offset
    v2, v1 = tx_frame(f, version=2), tx_frame(f, codec="paper")
    assert v2[p:p + 4] == bytes([0x03, 0xE8, 0xC6, 10]) and v1[p:p + 4] == bytes([0x03, 0xE8, 0xC5, 10])
    assert len(v1) == len(v2)                                    # same bytes on the wire
    assert v2[p:] == golden.compress_payload(gradients(1000), 10, "bounded")
    assert v1[p:] == golden.compress_payload(gradients(1000), 10, "paper")
    with pytest.raises(ValueError, match="codec"):
        tx_frame(f, codec="v2")
    for codec, version in (("paper", 2), ("paper", 3), ("bounded", 1), ("bounded", 4)):
        with pytest.raises(ValueError, match="version"):
            tx_frame(f, codec=codec, version=version)


@pytest.mark.parametrize("k,codec,compressed", [
    (0, "bounded", False), (1, "bounded", True), (16, "bounded", True), (17, "bounded", False),
    (126, "bounded", False), (127, "bounded", False),
    (0, "paper", False), (1, "paper", True), (17, "paper", True), (126, "paper", True),
    (127, "paper", False)])
def test_tx_k_range_per_codec_bypasses_and_counts(k, codec, compressed):
    f = frame(gradients(800, seed=k))
    c = Counters()
    out = tx_frame(f, k=k, codec=codec, counters=c, version=None if codec == "paper" else 2)
    assert (out != f) == compressed
    assert (c.compressed, c.bypassed) == ((1, 0) if compressed else (0, 1))
    assert (c.version1, c.version2) == ((int(compressed), 0) if codec == "paper" else (0, int(compressed)))


def test_mixed_versions_back_to_back_and_counters():
    tx, rx = Counters(), Counters()
    frames, codecs = [], []
    for i in range(12):
        codec = ("bounded", "paper", "paper", "bounded")[i % 4]
        k = 4 + i
        f = frame(gradients(300 + 41 * i, seed=i), "udp" if i % 3 else "tcp")
        w = tx_frame(f, k=k, codec=codec, counters=tx, version=None if codec == "paper" else 2)
        host, bad = rx_frame(w, counters=rx, versions=(1, 2))
        p = packet_matcher(f).payload_offset
        assert not bad and len(host) == len(f) and w[p + 2] == golden.CODEC_MAGIC[codec]
        assert golden.l4_checksum_ok(host) and golden.ip_checksum_ok(host)
        vals = np.frombuffer(f[p:p + (len(f) - p) // 4 * 4], "<f4")
        assert host[p:p + vals.size * 4] == golden.roundtrip(vals, k, codec).tobytes()
        frames.append(w)
        codecs.append(codec)
    assert (tx.version1, tx.version2, tx.compressed) == (6, 6, 12)
    assert (rx.version1, rx.version2, rx.decompressed, rx.malformed) == (6, 6, 12, 0)


def test_a_receiver_that_knows_only_version_1_forwards_version_2():
    f = frame(gradients(600))
    w2, w1 = tx_frame(f, version=2), tx_frame(f, codec="paper")
    c = Counters()
    assert rx_frame(w2, versions=(1,), counters=c) == (w2, False)
    assert c.bypassed == 1 and c.decompressed == 0
    assert rx_frame(w1, versions=(1,))[0] == rx_frame(w1, versions=(1, 2))[0] != w1
    assert rx_frame(w1, versions=(2,)) == (w1, False)
    for bad in ((4,), (1, 4), (0,), "1", None):
        with pytest.raises(ValueError, match="versions"):
            rx_frame(w1, versions=bad)


def _with_shim(f, shim4):
    """The frame with its first 4 payload bytes replaced."""
    p = packet_matcher(f).payload_offset
    return f[:p] + bytes(shim4) + f[p + 4:]


def test_rx_version_2_acceptance_rule():
    """k in 1..16, L > received, P + L <= 9216 and min_compressed_len(L) <= received;
    version 1 keeps its own rule (no k check, no L bound beyond the frame store)."""
    received = 100
    f = frame(bytes(received), "udp")
    p = packet_matcher(f).payload_offset
    # 4 + 2 ceil(n/8) + r <= 100: at most 48 groups and no tail: L <= 4 * 384 = 1536
    lmax = max(length for length in range(0, 4000) if golden.min_compressed_len(length) <= received)
    assert lmax == 1536 and golden.min_compressed_len(1535) == 103
    cases = [
        ((received + 1, 10), True), ((lmax, 1), True), ((lmax, 16), True),
        ((lmax + 1, 10), False), ((lmax - 1, 10), False),  # more than 100 bytes can restore
        ((received, 10), False),                       # L not above the received length
        ((500, 0), False), ((500, 17), False), ((500, 0xC6), False),   # k out of range
    ]
    for (length, k), accept in cases:
        shim = length.to_bytes(2, "big") + bytes([0xC6, k])
        assert (golden.shim_accepted(shim, received, p, (1, 2)) == 2) == accept, (length, k)
        c = Counters()
        out, _ = rx_frame(_with_shim(f, shim), counters=c, versions=(1, 2))
        assert (c.decompressed, c.bypassed, c.version2) == ((1, 0, 1) if accept else (0, 1, 0))
        if not accept:
            assert out == _with_shim(f, shim)
    # Version 1: the same shims with 0xC5 are accepted whenever L > received (and fits).
    for length, k in ((lmax + 1, 10), (9000, 0), (9000, 127)):
        shim = length.to_bytes(2, "big") + bytes([0xC5, k])
        assert golden.shim_accepted(shim, received, p, (1, 2)) == 1
    assert golden.shim_accepted((9216 - p + 1).to_bytes(2, "big") + b"\xC5\x0a", received, p, (1, 2)) is None
    assert golden.shim_accepted((9216 - p + 1).to_bytes(2, "big") + b"\xC6\x0a", 9000, p, (1, 2)) is None


@pytest.mark.long
def test_foreign_dscp10_payloads_follow_the_rule_and_version_2_takes_far_fewer():
    """Random TCP payloads with byte 2 forced to each magic: RX decompresses exactly those
    the rule (written out here) accepts; version 2 takes about 1/16 of what version 1
    takes (its k byte must be in 1..16), and never an L its bytes cannot encode."""
    rng = np.random.default_rng(22)
    acc = {1: 0, 2: 0}
    n = 1500
    for _ in range(n):
        size = int(rng.integers(4, 1460))
        pl = bytearray(rng.bytes(size))
        length, k = int.from_bytes(pl[:2], "big"), pl[3]
        base = length > size and 54 + length <= 9216
        nv, r = divmod(length, 4)
        want = {1: base, 2: base and 1 <= k <= 16 and 4 + 2 * -(-nv // 8) + r <= size}
        for version, magic in ((1, 0xC5), (2, 0xC6)):
            pl[2] = magic
            f = frame(bytes(pl))
            c = Counters()
            rx_frame(f, counters=c, versions=(1, 2))
            assert c.decompressed == int(want[version]), (version, length, k, size)
            acc[version] += c.decompressed
    assert acc[1] > 0.05 * n
    assert acc[2] < acc[1] / 8
