"""Frame transforms (spec section 4) and counters (section 5), frames built with scapy.

The bounded codec's frames are wire version 3 (tx_frame's default: the checked shim);
tests of the version-1/2 frame rules that rewrite a compressed payload (which version 3's
check word refuses) name version 2 and a receiver that accepts it."""

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Padding, Raw

from inceptionn import golden
from inceptionn.golden import Counters, MAX_FRAME_BYTES, packet_matcher, rx_frame, tx_frame
from inceptionn.golden.decompression_engine import RX_HEADER_WINDOW

SRC, DST = "10.1.2.3", "10.9.8.7"
ALL = golden.VERSIONS                     # a receiver that accepts every wire version


def gradients(nbytes, seed=0, scale=1e-2):
    """Gradient-like payload: N(0, scale) float32s, then raw tail bytes."""
    rng = np.random.default_rng(seed)
    vals = rng.normal(0, scale, nbytes // 4).astype(np.float32).tobytes()
    return vals + bytes(rng.integers(0, 256, nbytes % 4, dtype=np.uint8))


def noise(nbytes, seed=0):
    """Incompressible payload: floats of magnitude >= 1 all need the 34-bit code."""
    rng = np.random.default_rng(seed)
    vals = (rng.uniform(1, 1e6, nbytes // 4) * rng.choice([-1, 1], nbytes // 4)).astype(np.float32)
    return vals.tobytes() + bytes(rng.integers(0, 256, nbytes % 4, dtype=np.uint8))


def frame(payload, proto="tcp", tos=0x28, vlan=False, ip_opts=b"", tcp_opts=None,
          udp_chksum=None, pad=b"", **ip_kw):
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan:
        eth = eth / Dot1Q(vlan=7)
    ip = IP(src=SRC, dst=DST, tos=tos, options=ip_opts, **ip_kw) if ip_opts else \
        IP(src=SRC, dst=DST, tos=tos, **ip_kw)
    if proto == "tcp":
        l4 = TCP(sport=4000, dport=5000, seq=123, flags="PA", options=tcp_opts or [])
    else:
        l4 = UDP(sport=4000, dport=5000) if udp_chksum is None else \
            UDP(sport=4000, dport=5000, chksum=udp_chksum)
    pkt = eth / ip / l4 / Raw(payload)
    if pad:
        pkt = pkt / Padding(pad)
    return bytes(pkt)


def scapy_checksums_agree(raw):
    """Recompute IP and L4 checksums with scapy and compare with the frame's fields."""
    pkt = Ether(raw)
    ip = pkt[IP]
    l4 = ip.payload
    got_ip, got_l4 = ip.chksum, l4.chksum
    ip.chksum = None
    l4.chksum = None
    again = Ether(bytes(pkt))
    if isinstance(l4, UDP) and got_l4 == 0:
        return again[IP].chksum == got_ip          # UDP checksum disabled
    return again[IP].chksum == got_ip and again[IP].payload.chksum == got_l4


def check_roundtrip(orig, payload, k=10, dscp=10, codec="bounded"):
    """TX then RX; returns 'compressed', 'fallback' or 'bypass' after checking each case."""
    c_tx, c_rx = Counters(), Counters()
    wire = tx_frame(orig, k=k, dscp=dscp, counters=c_tx, codec=codec)
    host, bad = rx_frame(wire, dscp=dscp, counters=c_rx, versions=ALL)
    assert not bad
    info = packet_matcher(orig, dscp)
    if info is None:
        assert wire == orig and host == orig
        assert c_tx.bypassed == 1 and c_rx.bypassed == 1
        return "bypass"
    vnum = golden.CODEC_VERSION[codec]
    comp = golden.compress_payload(payload, k, codec, vnum)
    assert comp[2] == (0xC5 if codec == "paper" else 0xC7) and comp[3] == k
    if len(comp) >= len(payload):
        assert c_tx.fallback == 1 and c_rx.bypassed == 1
        assert len(wire) == len(orig) and host == wire
        assert wire[info.l3 + 1] == orig[info.l3 + 1] & 0x03          # DSCP 0, ECN kept
        assert golden.ip_checksum_ok(wire) and scapy_checksums_agree(wire)
        diff = [i for i in range(len(orig)) if orig[i] != wire[i]]
        assert set(diff) <= {info.l3 + 1, info.l3 + 10, info.l3 + 11}
        return "fallback"
    assert c_tx.compressed == 1 and c_rx.decompressed == 1
    version = f"version{vnum}"
    assert getattr(c_tx, version) == 1 == getattr(c_rx, version)
    assert c_tx.version1 + c_tx.version2 + c_tx.version3 == 1 == c_rx.version1 + c_rx.version2 + c_rx.version3
    assert c_tx.payload_bytes_in == len(payload) == c_rx.payload_bytes_out
    assert c_tx.payload_bytes_out == len(comp) == c_rx.payload_bytes_in
    p = info.payload_offset
    if vnum == 3:
        # The check word over the header as it goes on the wire (golden.shim_check).
        word = golden.check_word(wire, info.l3, info.l4, info.proto, len(comp), comp[:4])
        comp = comp[:4] + word.to_bytes(4, "big") + comp[8:]
    assert wire == wire[:p] + comp and len(wire) == p + len(comp)
    assert golden.ip_checksum_ok(wire)
    assert len(host) == p + len(payload)
    n4 = len(payload) // 4 * 4
    vals = np.frombuffer(payload[:n4], "<f4").astype(np.float32)
    assert host[p:] == golden.roundtrip(vals, k, codec).astype("<f4").tobytes() + payload[n4:]
    assert scapy_checksums_agree(host)
    assert golden.l4_checksum_ok(host) and golden.ip_checksum_ok(host)
    # headers restored exactly, but for the checksums
    csum = {info.l3 + 10, info.l3 + 11}
    l4c = info.l4 + (16 if info.proto == 6 else 6)
    csum |= {l4c, l4c + 1}
    assert [i for i in range(p) if host[i] != orig[i]] == [i for i in range(p)
                                                           if host[i] != orig[i] and i in csum]
    return "compressed"


CODECS = ["bounded", "paper"]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_every_small_length(proto, codec):
    kinds = {}
    for n in range(0, 101):
        for gen in (gradients, noise):
            payload = gen(n, seed=n)
            f = frame(payload, proto)
            kind = check_roundtrip(f, payload, codec=codec)
            kinds.setdefault(kind, []).append(n)
            assert (kind == "bypass") == (n < 4)
    assert set(kinds) == {"bypass", "fallback", "compressed"}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("n", [1448, 1460, 8972])
@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_large_payloads(n, proto, codec):
    for k in (6, 10, 20 if codec == "paper" else 16):
        payload = gradients(n, seed=k)
        assert check_roundtrip(frame(payload, proto), payload, k=k, codec=codec) == "compressed"
    payload = noise(n)
    assert check_roundtrip(frame(payload, proto), payload, codec=codec) == "fallback"


@pytest.mark.parametrize("variant", [
    dict(vlan=True),
    dict(ip_opts=b"\x01\x01\x01\x00"),                      # NOP NOP NOP EOL
    dict(ip_opts=b"\x07\x07\x04" + bytes(4) + b"\x00"),     # record route
    dict(tcp_opts=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 2)), ("NOP", None),
                   ("WScale", 7)]),
    dict(vlan=True, ip_opts=b"\x01\x01\x01\x00", tcp_opts=[("NOP", None), ("NOP", None)]),
    dict(tos=0x29), dict(tos=0x2A), dict(tos=0x2B),           # ECN bits ignored
    dict(flags="DF"),
    dict(proto="udp"), dict(proto="udp", vlan=True), dict(proto="udp", ip_opts=b"\x01" * 8),
    dict(proto="udp", udp_chksum=0),
], ids=lambda v: "-".join(f"{a}={b}" for a, b in v.items())[:40])
@pytest.mark.parametrize("codec", CODECS)
def test_header_variants(variant, codec):
    for n in (40, 333, 1000):
        payload = gradients(n, seed=n)
        f = frame(payload, **variant)
        assert check_roundtrip(f, payload, codec=codec) == "compressed"
        if variant.get("udp_chksum") == 0:
            wire = tx_frame(f, codec=codec)
            info = packet_matcher(f)
            assert wire[info.l4 + 6:info.l4 + 8] == b"\0\0"
            assert rx_frame(wire, versions=ALL)[0][info.l4 + 6:info.l4 + 8] == b"\0\0"


def test_fallback_keeps_ecn():
    payload = noise(200)
    for tos in (0x28, 0x29, 0x2B):
        f = frame(payload, tos=tos)
        out = tx_frame(f)
        assert Ether(out)[IP].tos == tos & 3
        assert check_roundtrip(f, payload) == "fallback"


@pytest.mark.parametrize("variant", [
    dict(tos=0x00), dict(tos=0x2C), dict(tos=0xB8), dict(tos=0x24),  # other DSCPs
    dict(flags="MF"), dict(frag=10), dict(flags="MF", frag=3),       # fragments
], ids=str)
def test_not_eligible_unchanged(variant):
    payload = gradients(500)
    f = frame(payload, **variant)
    assert packet_matcher(f) is None
    assert tx_frame(f) == f
    assert rx_frame(f) == (f, False)


def test_configured_dscp():
    payload = gradients(500)
    f = frame(payload, tos=46 << 2)
    assert tx_frame(f) == f
    assert check_roundtrip(f, payload, dscp=46) == "compressed"
    with pytest.raises(ValueError, match="DSCP"):
        tx_frame(f, dscp=64)
    with pytest.raises(ValueError, match="DSCP"):
        rx_frame(f, dscp=-1)


def test_other_protocols_unchanged():
    pl = gradients(200)
    frames = [
        bytes(Ether() / ARP()),
        bytes(Ether() / IPv6(tc=0x28) / UDP() / Raw(pl)),
        bytes(Ether() / IP(tos=0x28, proto=47) / Raw(pl)),           # GRE
        bytes(Ether() / IP(tos=0x28) / Raw(pl)),                     # proto 0
        bytes(Ether(type=0x88B5) / Raw(pl)),
        bytes(Ether() / Dot1Q() / Dot1Q() / IP(tos=0x28) / UDP() / Raw(pl)),   # QinQ
    ]
    for f in frames:
        assert packet_matcher(f) is None
        assert tx_frame(f) == f and rx_frame(f) == (f, False)


def test_runts_and_lying_lengths():
    good = frame(gradients(200), "udp")
    tcp = frame(gradients(200), "tcp")
    l3 = 14
    bad = [good[:n] for n in (0, 1, 13, 14, 20, 33, 34, 41, 42, 45, 100, len(good) - 1)]

    def poke(f, off, val):
        b = bytearray(f)
        b[off:off + len(val)] = val
        return bytes(b)

    bad += [
        poke(good, l3 + 2, (len(good) - 14 + 1).to_bytes(2, "big")),   # IP total past the frame
        poke(good, l3 + 2, (19).to_bytes(2, "big")),                   # total < header
        poke(good, l3, b"\x44"),                                       # IHL 4
        poke(good, l3, b"\x65"),                                       # version 6
        poke(good, l3 + 20 + 4, (300).to_bytes(2, "big")),             # UDP length lies
        poke(good, l3 + 20 + 4, (207).to_bytes(2, "big")),
        poke(tcp, l3 + 20 + 12, b"\x40"),                              # TCP data offset 4
        poke(good, l3, b"\x4F"),                                       # IHL 15 eats the payload
    ]
    for f in bad:
        assert tx_frame(f) == f
        assert rx_frame(f) == (f, False)
    # A 60-byte TCP header is legal: its options come out of the payload.
    assert packet_matcher(poke(tcp, l3 + 20 + 12, b"\xF0")).payload_len == 200 - 40
    # A total length shorter than the frame leaves Ethernet padding, which is fine.
    assert packet_matcher(poke(good, l3 + 2, (len(good) - 14 - 4).to_bytes(2, "big"))) is None  # UDP len now lies
    with pytest.raises(ValueError, match="too short"):
        golden.parse_frame(good[:20])
    with pytest.raises(ValueError, match="too short"):
        golden.ip_checksum_ok(b"")


def test_ethernet_padding():
    payload = bytes(16)
    f = frame(payload, "udp", pad=b"\0\0")
    assert len(f) == 60
    info = packet_matcher(f)
    assert info.payload_len == 16
    wire = tx_frame(f)
    assert len(wire) == info.payload_offset + 10           # 8-byte shim + one zero tag word
    host, bad = rx_frame(wire)
    assert not bad and host == f[:58]                       # padding dropped
    # The MAC pads the short compressed frame on the wire; RX ignores the padding.
    assert rx_frame(wire + bytes(60 - len(wire))) == (host, False)
    # TCP too
    f = frame(bytes(40), "tcp", pad=b"\xAA" * 6)
    host, bad = rx_frame(tx_frame(f))
    assert host == f[:-6] and not bad


def test_udp_checksum_zero_sent_as_ffff():
    payload = gradients(64, seed=3)
    d = golden.decoded_payload(payload, 10, "bounded")
    base = Ether(frame(payload, "udp"))
    # One's-complement sum of the restored datagram with sport 0; pick sport to make it 0xFFFF.
    base[UDP].sport = 0
    base[UDP].chksum = 0
    udp = bytes(base[UDP])[:8] + d
    words = bytes(map(int, SRC.split("."))) + bytes(map(int, DST.split("."))) + \
        bytes([0, 17]) + len(udp).to_bytes(2, "big") + udp
    s = sum(int.from_bytes(words[i:i + 2], "big") for i in range(0, len(words), 2))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    sport = 0xFFFF - s
    assert 0 < sport <= 0xFFFF
    base[UDP].sport = sport
    base[UDP].chksum = None
    f = bytes(base)
    wire = tx_frame(f)
    info = packet_matcher(f)
    assert wire[info.l4 + 6:info.l4 + 8] == b"\xff\xff"
    host, bad = rx_frame(wire)
    assert scapy_checksums_agree(host) and not bad


def test_oversize_dropped_and_limits():
    c = Counters()
    big = frame(gradients(MAX_FRAME_BYTES - 54 + 1), "tcp")
    assert len(big) == MAX_FRAME_BYTES + 1
    assert tx_frame(big, counters=c) is None
    assert tx_frame(big, enable=False, counters=c) is None
    fits = frame(gradients(MAX_FRAME_BYTES - 54), "tcp")
    assert len(fits) == MAX_FRAME_BYTES
    assert tx_frame(fits, counters=c) is not None
    assert (c.frames_in, c.frames_out, c.dropped, c.compressed) == (3, 1, 2, 1)
    # RX forwards any length (cut-through) and refuses a restore past the maximum.
    host, bad = rx_frame(big)
    assert host == big and not bad
    wire = tx_frame(fits)
    b = bytearray(wire)
    p = packet_matcher(wire).payload_offset
    b[p:p + 2] = (MAX_FRAME_BYTES - 54 + 1).to_bytes(2, "big")       # claims one byte more
    c = Counters()
    assert rx_frame(bytes(b), counters=c) == (bytes(b), False) and c.bypassed == 1


def test_rx_shim_rejected():
    payload = gradients(400)
    wire = tx_frame(frame(payload), version=2)
    p = packet_matcher(wire).payload_offset
    for off, val in ((2, b"\xC4"), (0, (len(wire) - p).to_bytes(2, "big")),
                     (0, (len(wire) - p - 1).to_bytes(2, "big"))):
        b = bytearray(wire)
        b[p + off:p + off + len(val)] = val
        c = Counters()
        assert rx_frame(bytes(b), counters=c, versions=ALL) == (bytes(b), False)
        assert c.bypassed == 1 and c.decompressed == 0


def _reframe(wire, comp):
    """Replace the compressed payload of a wire frame, fixing the IP total length."""
    info = packet_matcher(wire)
    b = bytearray(wire[:info.payload_offset] + comp)
    b[info.l3 + 2:info.l3 + 4] = (info.ip_total_len + len(comp) - info.payload_len).to_bytes(2, "big")
    return bytes(b)


def test_rx_malformed():
    """Version 2 (version 3 refuses these rewritten payloads by their check word:
    tests/test_golden_frames_v3.py)."""
    payload = gradients(401)
    orig = frame(payload)
    wire = tx_frame(orig, version=2)
    info = packet_matcher(wire)
    comp = wire[info.payload_offset:]
    good, _ = rx_frame(wire, versions=(2,))
    cases = [comp + b"\x00",                  # a byte left over
             comp[:-1],                       # the tail runs out
             comp[:4] + b"\xff\xff" + comp[6:],   # first tag word says 8 raw floats
             comp[:40]]                       # groups run out
    for bad_comp in cases:
        c = Counters()
        host, bad = rx_frame(_reframe(wire, bad_comp), counters=c, versions=(2,))
        assert bad and c.malformed == 1 and c.decompressed == 1
        assert len(host) == len(orig) and host[:info.payload_offset] == good[:info.payload_offset]
        assert host[info.payload_offset:] == golden.decompress_payload(bad_comp)[0]
    # Groups that ran out restore as zeros, to the full length.
    host, bad = rx_frame(_reframe(wire, comp[:40]), versions=(2,))
    assert host[-100:] == bytes(100) and good[-100:] != bytes(100)


def test_tuser_and_enable():
    payload = gradients(300)
    f = frame(payload)
    c = Counters()
    assert tx_frame(f, tuser=True, counters=c) == f
    assert tx_frame(f, enable=False, counters=c) == f
    assert tx_frame(f, k=0, counters=c) == f
    assert tx_frame(f, k=127, counters=c) == f
    assert c.bypassed == 4 and c.compressed == 0
    with pytest.raises(ValueError, match="k"):
        tx_frame(f, k=128)
    with pytest.raises(ValueError, match="k"):
        tx_frame(f, k=2.5)
    wire = tx_frame(f)
    c = Counters()
    host, bad = rx_frame(wire, tuser=True, counters=c)
    assert bad and host == rx_frame(wire)[0] and c.decompressed == 1 and c.malformed == 0
    assert rx_frame(wire, enable=False) == (wire, False)
    assert rx_frame(wire, enable=False, tuser=True) == (wire, True)
    assert rx_frame(f, tuser=True) == (f, True)


def test_counters_batch():
    tx, rx = Counters(), Counters()
    frames, expect_in = [], 0
    for i in range(10):
        pl = gradients(200 + 37 * i, seed=i)
        frames.append(frame(pl, "udp" if i % 2 else "tcp"))
        expect_in += len(pl)
    frames += [frame(noise(300)), frame(noise(20), "udp"), bytes(Ether() / ARP()),
               frame(gradients(300), tos=0), frame(gradients(3)),
               frame(gradients(MAX_FRAME_BYTES), "udp")]
    wire = [tx_frame(f, counters=tx) for f in frames]
    assert wire[-1] is None
    outs = [rx_frame(w, counters=rx) for w in wire[:-1]]
    assert tx.as_dict() == dict(frames_in=16, frames_out=15, compressed=10, decompressed=0,
                                bypassed=3, fallback=2, malformed=0, dropped=1,
                                payload_bytes_in=expect_in, payload_bytes_out=tx.payload_bytes_out,
                                version1=0, version2=0, version3=10, check_failed=0)
    comp_bytes = sum(len(w) - packet_matcher(w).payload_offset for w in wire[:10])
    assert tx.payload_bytes_out == comp_bytes == rx.payload_bytes_in
    assert rx.as_dict() == dict(frames_in=15, frames_out=15, compressed=0, decompressed=10,
                                bypassed=5, fallback=0, malformed=0, dropped=0,
                                payload_bytes_in=comp_bytes, payload_bytes_out=expect_in,
                                version1=0, version2=0, version3=10, check_failed=0)
    assert not any(bad for _, bad in outs)


def test_checksum_helpers():
    f = frame(gradients(99), "udp")
    assert golden.ip_checksum_ok(f) and golden.l4_checksum_ok(f)
    b = bytearray(f)
    b[-1] ^= 1
    assert not golden.l4_checksum_ok(bytes(b))
    assert golden.internet_checksum(bytes.fromhex("45000073000040004011b861c0a80001c0a800c7")) == 0
    assert golden.ip_header_checksum(bytes.fromhex("45000073000040004011" "0000" "c0a80001c0a800c7")) \
        == 0xB861
    assert golden.ones_sum(b"\x01") == 0x0100


def test_rx_truncated_long_frame_flagged():
    """Past the RX header window the IP total length is trusted (cut-through): a frame
    cut short is restored to P + L bytes from what arrived and flagged bad."""
    for proto in ("udp", "tcp"):
        orig = frame(gradients(1000, seed=3), proto)
        wire = tx_frame(orig)
        info = packet_matcher(wire)
        p, lr = info.payload_offset, info.payload_len
        good, _ = rx_frame(wire)
        cut = wire[:len(wire) - 50]
        assert len(cut) > RX_HEADER_WINDOW and packet_matcher(cut) is None
        assert packet_matcher(cut, window=RX_HEADER_WINDOW).payload_len == lr
        c = Counters()
        host, bad = rx_frame(cut, counters=c)
        assert bad and len(host) == len(orig) == p + int.from_bytes(wire[p:p + 2], "big")
        assert host[:p] == good[:p]                  # lengths restored, IP checksum fixed
        assert host[p:] == golden.decompress_payload(cut[p:])[0]
        assert host[-40:] == bytes(40) and good[-40:] != bytes(40)
        assert (c.decompressed, c.malformed, c.bypassed) == (1, 1, 0)
        assert (c.payload_bytes_in, c.payload_bytes_out) == (lr, len(orig) - p)
        # input tuser changes nothing but is propagated
        assert rx_frame(cut, tuser=True) == (host, True)
    # A version-2 TCP frame whose IP total length claims 40 bytes more than it has: every
    # group decodes, but the frame is still bad (bytes are missing).
    wire = tx_frame(frame(gradients(1000, seed=4), "tcp"), version=2)
    info = packet_matcher(wire)
    lying = bytearray(wire)
    lying[info.l3 + 2:info.l3 + 4] = (info.ip_total_len + 40).to_bytes(2, "big")
    c = Counters()
    host, bad = rx_frame(bytes(lying), counters=c, versions=(2,))
    assert not golden.decompress_payload(wire[info.payload_offset:])[1]
    assert (host, bad) == (rx_frame(wire, versions=(2,))[0], True) and c.malformed == 1
    # In version 3 the check word covers |C| as the IP header gives it: the lie is refused.
    wire = tx_frame(frame(gradients(1000, seed=4), "tcp"))
    lying = bytearray(wire)
    lying[info.l3 + 2:info.l3 + 4] = (packet_matcher(wire).ip_total_len + 40).to_bytes(2, "big")
    c = Counters()
    assert rx_frame(bytes(lying), counters=c) == (bytes(lying), False)
    assert (c.bypassed, c.check_failed, c.decompressed) == (1, 1, 0)
    # TX is not cut-through: it keeps the full rule.
    assert tx_frame(bytes(lying)) == bytes(lying)


def test_rx_truncated_frame_within_window_unchanged():
    """A frame that ends within the header window is judged in full: a lying IP total
    length makes it ineligible, forwarded unchanged (as are frames of exactly the window)."""
    short = tx_frame(frame(gradients(100, seed=5), "tcp"))
    assert len(short) <= RX_HEADER_WINDOW and packet_matcher(short) is not None
    long = tx_frame(frame(gradients(1000, seed=5), "udp"))
    for f in (short[:-10], long[:RX_HEADER_WINDOW], long[:100]):
        assert packet_matcher(f, window=RX_HEADER_WINDOW) is None
        c = Counters()
        assert rx_frame(f, counters=c) == (f, False)
        assert (c.bypassed, c.decompressed, c.malformed) == (1, 0, 0)
        assert rx_frame(f, tuser=True) == (f, True)
    # One byte past the window, the same frame is restored and flagged.
    host, bad = rx_frame(long[:RX_HEADER_WINDOW + 1])
    assert bad and len(host) == len(rx_frame(long)[0])
    with pytest.raises(ValueError, match="window"):
        packet_matcher(long, window=-1)


def test_frame_fields_and_checksums_ok_agree_with_scapy():
    """The host side's parser and checksum check are golden.frames' (one implementation):
    any DSCP, short payloads and pure ACKs parse; the checks agree with scapy's."""
    from inceptionn.drivers import tcp_frames as F
    from inceptionn.golden.frames import checksums_ok, frame_fields
    assert F.checksums_ok is checksums_ok
    for proto in ("tcp", "udp"):
        for vlan in (False, True):
            for n in (0, 3, 99):
                raw = frame(gradients(n) if n % 4 == 0 else noise(n), proto, tos=0, vlan=vlan)
                fields = frame_fields(raw)
                assert fields.vlan == vlan and fields.tos == 0
                assert fields.proto == (6 if proto == "tcp" else 17)
                assert len(fields.payload) == n
                assert (fields.tcp_flags is None) == (proto == "udp")
                assert checksums_ok(raw) == (True, True) and scapy_checksums_agree(raw)
                bad = bytearray(raw)
                bad[fields.l4 + (16 if proto == "tcp" else 6)] ^= 0x40
                assert checksums_ok(bytes(bad)) == (True, False)
    with pytest.raises(ValueError, match="neither TCP nor UDP"):
        frame_fields(bytes(Ether() / IP(proto=47) / Raw(bytes(8))))
