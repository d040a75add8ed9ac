"""Frames of wire format version 3 (docs/wire-format.md section 10): the checked shim.

TX writes it by default; RX accepts it alone by default and only when the check word
matches the frame's invariant header fields. None of the structured look-alikes the
section lists is accepted; damaged genuine frames are refused by the check, flagged, or
fail the restored L4 checksum, never delivered as valid data."""

import zlib

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from inceptionn import golden
from inceptionn.golden import Counters, packet_matcher, rx_frame, tx_frame


def gradients(nbytes, seed=0, scale=1e-2):
    rng = np.random.default_rng(seed)
    return rng.normal(0, scale, nbytes // 4).astype(np.float32).tobytes() + bytes(nbytes % 4)


def frame(payload, proto="tcp", src="10.0.0.1", dst="10.0.0.2", sport=4000, dport=5000, seq=7,
          ip_id=1, tos=0x28, ttl=64):
    l4 = TCP(sport=sport, dport=dport, seq=seq, flags="PA") if proto == "tcp" else \
        UDP(sport=sport, dport=dport)
    return bytes(Ether() / IP(src=src, dst=dst, tos=tos, id=ip_id, ttl=ttl) / l4 / Raw(payload))


def _payload(f):
    info = packet_matcher(f)
    return f[info.payload_offset:info.payload_offset + info.payload_len]


def _rx(f, **kw):
    c = Counters()
    out, bad = rx_frame(f, counters=c, **kw)
    return out, bad, c


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_tx_writes_version_3_by_default_and_rx_restores_it(proto):
    payload = gradients(1001)
    f = frame(payload, proto)
    c = Counters()
    w = tx_frame(f, counters=c)
    info = packet_matcher(w)
    comp = _payload(w)
    assert comp[:4] == bytes([0x03, 0xE9, 0xC7, 10]) and c.version3 == 1
    # The check word: CRC-32 of the 26-byte message of shim_check's docstring.
    msg = (bytes([10, 0, 0, 1, 10, 0, 0, 2]) + (1).to_bytes(2, "big")
           + bytes([6 if proto == "tcp" else 17, 0]) + (4000).to_bytes(2, "big")
           + (5000).to_bytes(2, "big") + ((7).to_bytes(4, "big") if proto == "tcp" else bytes(4))
           + len(comp).to_bytes(2, "big") + comp[:4])
    assert golden.check_message(w, info.l3, info.l4, info.proto, len(comp), comp[:4]) == msg
    assert int.from_bytes(comp[4:8], "big") == zlib.crc32(msg)
    # The groups are version 2's, after the longer shim.
    v2 = _payload(tx_frame(f, version=2))
    assert comp[8:] == v2[4:] and len(comp) == len(v2) + 4
    host, bad, rc = _rx(w)
    assert not bad and (rc.decompressed, rc.version3, rc.check_failed) == (1, 1, 0)
    assert host == rx_frame(tx_frame(f, version=2), versions=(2,))[0]
    assert golden.l4_checksum_ok(host) and golden.ip_checksum_ok(host)
    # Fields a hop may change do not matter: TTL, ECN, the MACs.
    hop = bytearray(w)
    hop[0:12] = bytes(range(12))
    hop[14 + 8] -= 3                                     # TTL
    hop[14 + 1] |= 0x03                                  # ECN CE
    assert _rx(bytes(hop))[2].decompressed == 1


def test_rx_default_accepts_version_3_only_and_the_mask_is_per_frame():
    f = frame(gradients(600))
    w1, w2, w3 = tx_frame(f, codec="paper"), tx_frame(f, version=2), tx_frame(f)
    for w in (w1, w2):
        assert _rx(w)[:2] == (w, False)
    assert _rx(w3)[2].decompressed == 1
    for versions, accepted in (((1,), {1}), ((2, 3), {2, 3}), ((1, 2, 3), {1, 2, 3}), ((), set())):
        got = {v for v, w in ((1, w1), (2, w2), (3, w3)) if _rx(w, versions=versions)[2].decompressed}
        assert got == accepted, versions
    assert golden.versions_mask(()) == 0 and golden.versions_mask((3, 1)) == 0b101
    c = Counters()
    assert rx_frame(w3, versions=(), counters=c) == (w3, False) and c.bypassed == 1


def _lookalikes(proto):
    """Payloads of a host without a TX engine that look like a version-3 shim as far as
    anything but the check word goes, and structured payloads."""
    size = 1448 if proto == "tcp" else 1472
    out = [bytes(size), b"\xff" * size]
    rng = np.random.default_rng(5)
    for _ in range(40):
        word = bytes(rng.integers(0, 256, 4, dtype=np.uint8))
        out.append(word * (size // 4))
    for length, k in ((3000, 10), (size + 1, 1), (size * 4, 16)):
        out.append((length.to_bytes(2, "big") + bytes([0xC7, k])) * (size // 4))
        out.append(length.to_bytes(2, "big") + bytes([0xC7, k]) + rng.bytes(size - 4))
    return out


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_no_structured_lookalike_is_accepted(proto):
    for pl in _lookalikes(proto):
        f = frame(pl, proto)
        for versions in ((3,), (2, 3)):
            out, bad, c = _rx(f, versions=versions)
            assert (out, bad, c.decompressed) == (f, False, 0)
        # A foreign segment's retransmission carries the same bytes: the same answer.
        assert _rx(f)[:2] == (f, False)


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_a_genuine_payload_replayed_under_another_header_is_refused(proto):
    w = tx_frame(frame(gradients(1200, seed=2), proto))
    comp = _payload(w)
    assert _rx(w)[2].decompressed == 1
    others = [dict(src="10.0.0.9"), dict(dst="10.0.1.2"), dict(sport=4001), dict(dport=5001),
              dict(ip_id=2), dict(src="10.0.0.2", dst="10.0.0.1"), dict(sport=5000, dport=4000)]
    if proto == "tcp":
        others += [dict(seq=8), dict(seq=7 + 1448)]
    for kw in others:
        f = frame(comp, proto, **kw)
        out, bad, c = _rx(f)
        assert (out, bad, c.decompressed, c.check_failed) == (f, False, 0, 1), kw


def _flip(b, i, bit=0):
    b = bytearray(b)
    b[i] ^= 1 << bit
    return bytes(b)


def test_damaged_genuine_frames_are_never_delivered_as_valid():
    """Every single-bit flip of a genuine frame: refused by the check (forwarded as it
    came: a compressed payload under lengths and an L4 checksum made for the restored
    one), or decompressed and flagged, or decompressed with a restored L4 checksum that
    fails. Which case catches which byte is counted below (docs/wire-format.md 10)."""
    f = frame(gradients(200, seed=9), "tcp")
    w = tx_frame(f)
    info = packet_matcher(w)
    p = info.payload_offset
    caught = {"not eligible": 0, "check": 0, "flagged": 0, "L4 checksum": 0, "harmless": 0}
    for i in range(len(w)):
        for bit in range(8):
            d = _flip(w, i, bit)
            out, bad, c = _rx(d)
            if c.decompressed == 0:
                caught["check" if c.check_failed else "not eligible"] += 1
                if out[p:] == w[p:] and packet_matcher(out) is not None:
                    # a compressed payload reaches the host: its L4 checksum is D's
                    assert not golden.l4_checksum_ok(out), (i, bit)
            elif bad:
                caught["flagged"] += 1
            elif not golden.l4_checksum_ok(out):
                caught["L4 checksum"] += 1
            else:
                # Only the bits RX ignores or restores may change: MACs, TTL, ECN and the
                # IP checksum (recomputed); the data is intact.
                assert out[p:] == rx_frame(w)[0][p:], (i, bit)
                caught["harmless"] += 1
    # The shim and the header fields the check covers are refused (by the check, or the
    # magic or k byte no longer names an accepted version-3 shim).
    for i in list(range(info.l3 + 12, info.l3 + 20)) + list(range(p, p + 8)):
        c = _rx(_flip(w, i))[2]
        assert c.decompressed == 0 and (c.check_failed == 1 or i == p + 2), i
    assert caught["check"] > 0 and caught["L4 checksum"] + caught["flagged"] > 0


def test_truncated_and_extended_genuine_frames():
    w = tx_frame(frame(gradients(2000, seed=3), "udp"))
    info = packet_matcher(w)
    # Cut short with the IP lengths made to agree: the check covers |C|, refused.
    for cut in (1, 4, 50):
        b = bytearray(w[:-cut])
        b[info.l3 + 2:info.l3 + 4] = (info.ip_total_len - cut).to_bytes(2, "big")
        b[info.l4 + 4:info.l4 + 6] = (8 + info.payload_len - cut).to_bytes(2, "big")
        out, bad, c = _rx(bytes(b))
        assert (out, c.check_failed, c.decompressed) == (bytes(b), 1, 0)
    # Cut short with the IP lengths as sent (a frame lost its end): flagged.
    out, bad, c = _rx(w[:-50])
    assert bad and c.malformed == 1


def _resealed(w, comp):
    """A frame carrying ``comp`` under w's header, lengths fixed and the check word
    recomputed, as a TX engine would have sealed it."""
    info = packet_matcher(w)
    b = bytearray(w[:info.payload_offset] + comp)
    b[info.l3 + 2:info.l3 + 4] = (info.ip_total_len + len(comp) - info.payload_len).to_bytes(2, "big")
    word = golden.check_word(b, info.l3, info.l4, info.proto, len(comp), comp[:4])
    return bytes(b[:info.payload_offset]) + comp[:4] + word.to_bytes(4, "big") + comp[8:]


def test_a_shim_that_passes_its_check_with_malformed_groups_is_flagged_and_counted():
    w = tx_frame(frame(gradients(401), "tcp"))
    comp = _payload(w)
    for bad_comp in (comp + b"\0", comp[:-1], comp[:8] + b"\xff\xff" + comp[10:], comp[:40]):
        out, bad, c = _rx(_resealed(w, bad_comp))
        assert bad and (c.decompressed, c.malformed, c.version3) == (1, 1, 1)
        assert len(out) == len(frame(gradients(401), "tcp"))


def test_the_fast_implementation_gives_the_same_frames():
    rng = np.random.default_rng(4)
    for i in range(30):
        proto = "udp" if i % 2 else "tcp"
        f = frame(gradients(int(rng.integers(4, 1400)), seed=i), proto, seq=int(rng.integers(0, 2**32)),
                  ip_id=int(rng.integers(0, 65536)))
        w = tx_frame(f, k=1 + i % 16)
        assert tx_frame(f, k=1 + i % 16, impl=golden.fast.FAST) == w
        assert rx_frame(w, impl=golden.fast.FAST) == rx_frame(w)


def test_repeated_4_byte_patterns_pass_the_check_for_at_most_two_patterns_per_header():
    """A payload of one repeated 4-byte word w has shim bytes 0..3 = check word = w. The
    check is affine in w over GF(2), so check(w) = w is a linear system; its rank, 31,
    leaves at most 2 of the 2^32 words per header (docs/wire-format.md section 10)."""
    f = frame(bytes(1448), "tcp", seq=99)
    info = packet_matcher(f)

    def defect(word):
        shim = word.to_bytes(4, "big")
        return golden.check_word(f, info.l3, info.l4, info.proto, 1448, shim) ^ word

    zero = defect(0)
    rows = [defect(1 << b) ^ zero for b in range(32)]
    rank = 0
    for bit in range(32):
        piv = next((i for i in range(rank, 32) if rows[i] >> bit & 1), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        rows = [r ^ rows[rank] if i != rank and r >> bit & 1 else r for i, r in enumerate(rows)]
        rank += 1
    assert rank == 31


def test_payload_functions_of_version_3_and_their_errors():
    x = gradients(203, seed=6)
    c2 = golden.compress_payload(x, 10, "bounded")                  # the payload default: 2
    c3 = golden.compress_payload(x, 10, "bounded", 3)
    assert c2[2] == 0xC6 and c3[:4] == c2[:2] + bytes([0xC7, 10]) and c3[4:8] == bytes(4)
    assert c3[8:] == c2[4:]
    assert golden.fast.fast_compress_payload(x, 10, "bounded", 3) == c3
    assert golden.shim_version(c3) == 3 and golden.shim_codec(c3) == (203, "bounded", 10)
    assert golden.decompress_payload(c3) == golden.decompress_payload(c2)
    assert golden.fast.fast_decompress_payload(c3) == golden.decompress_payload(c3)
    assert golden.min_compressed_len(203, 3) == golden.min_compressed_len(203) + 4
    for codec, version in (("paper", 3), ("bounded", 1), ("bounded", 0), ("paper", True)):
        with pytest.raises(ValueError, match="version"):
            golden.make_shim(100, 10, codec, version)
    with pytest.raises(ValueError, match="8-byte shim"):
        golden.decompress_payload(c3[:6])
    with pytest.raises(ValueError, match="k = 0"):
        golden.decompress_payload(c3[:3] + b"\0" + c3[4:])
    with pytest.raises(ValueError, match="magic"):
        golden.shim_version(c3[:2] + b"\xc8" + c3[3:])
