"""The compiled frame path (drivers/fastpath.py) against the golden model, frame for
frame: the same bytes, the same bad flag, the same counters, and the same
misaligned-segment counts as drivers/tcp_align.StreamOffsets, on frames built by scapy
and then mangled. No network needed."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inceptionn import golden
from inceptionn.drivers import fastpath as fp
from inceptionn.drivers.tcp_align import StreamOffsets

BUF = fp.Buffers()
TABS = fp.tables()


def _tx(frame, k, codec, dscp=10, enable=True, version=None):
    cnt = np.zeros((1, len(fp.COLUMNS)), np.int64)
    BUF.inbuf[:len(frame)] = np.frombuffer(frame, np.uint8)
    lo, hi = golden.k_range(codec)
    w = fp.tx_into(BUF.inbuf, len(frame), BUF.wire, k,
                   golden.CODEC_VERSION[codec] if version is None else version,
                   fp.encode_lut(k, codec), dscp, enable and lo <= k <= hi, cnt, 0,
                   BUF.dec)
    return (None if w < 0 else bytes(BUF.wire[:w])), cnt[0, fp.TX0:fp.RX0]


def _rx(frame, dscp=10, enable=True, versions=golden.RX_VERSIONS_DEFAULT):
    cnt = np.zeros((1, len(fp.COLUMNS)), np.int64)
    BUF.wire[:len(frame)] = np.frombuffer(frame, np.uint8)
    h, bad = fp.rx_into(BUF.wire, len(frame), BUF.host, dscp, enable, cnt, 0, TABS,
                        golden.versions_mask(versions))
    return (bytes(BUF.host[:h]), bool(bad)), cnt[0, fp.RX0:]


def _golden_counts(c):
    return np.array(list(c.as_dict().values()), np.int64)


@st.composite
def frames(draw):
    """An Ethernet (maybe VLAN) / IPv4 / TCP or UDP frame, tagged or not, with a payload
    of floats of every magnitude and an odd tail, as a host stack would build it."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    n = draw(st.integers(0, 600))
    tail = draw(st.binary(max_size=3))
    vals = np.array(draw(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True),
                                  min_size=min(n, 8), max_size=min(n, 8))), np.float32)
    scale = draw(st.sampled_from([1e-6, 1e-3, 0.05, 1.0, 1e3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = np.concatenate([vals, (rng.normal(0, scale, n - vals.size)).astype(np.float32)])
    payload = x.tobytes() + tail
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if draw(st.booleans()):
        eth = eth / Dot1Q(vlan=draw(st.integers(0, 4095)))
    tos = draw(st.sampled_from([0x28, 0x29, 0x2B, 0x00, 0x2C]))
    ip = IP(src="10.0.0.1", dst="10.0.0.2", tos=tos, id=draw(st.integers(0, 65535)),
            flags=draw(st.sampled_from(["DF", "MF", 0])), ttl=64)
    if draw(st.booleans()):
        l4 = TCP(sport=40000, dport=5201, seq=draw(st.integers(0, 2**32 - 1)), ack=1,
                 flags=draw(st.sampled_from(["PA", "A", "S", "R", "FA"])),
                 options=draw(st.sampled_from([[], [("NOP", None), ("NOP", None),
                                                    ("Timestamp", (1, 2))]])))
    else:
        l4 = UDP(sport=6000, dport=6001)
    frame = bytes(eth / ip / l4 / payload)
    if draw(st.booleans()):   # a UDP checksum of 0 (off)
        if isinstance(l4, UDP):
            off = (18 if frame[12:14] == b"\x81\x00" else 14) + 20 + 6
            frame = frame[:off] + b"\0\0" + frame[off + 2:]
    return frame


def _mangle(draw, frame):
    """One of the ways a forged or broken frame lies."""
    b = bytearray(frame)
    how = draw(st.sampled_from(["none", "flip", "truncate", "extend", "iplen", "shim", "random"]))
    if how == "flip" and b:
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= 1 << draw(st.integers(0, 7))
    elif how == "truncate":
        b = b[:draw(st.integers(0, len(b)))]
    elif how == "extend":
        b += draw(st.binary(min_size=1, max_size=300))
    elif how == "iplen" and len(b) > 18:
        l3 = 18 if b[12:14] == b"\x81\x00" else 14
        b[l3 + 2:l3 + 4] = draw(st.integers(0, 0xFFFF)).to_bytes(2, "big")
    elif how == "shim" and len(b) > 60:
        i = draw(st.integers(40, min(len(b) - 4, 100)))
        b[i:i + 4] = draw(st.sampled_from([b"\x7f\xff\xc5\x0a", b"\xff\xff\xc6\x10",
                                           b"\x10\x00\xc6\x00", b"\x00\x05\xc6\x07",
                                           b"\x7f\xff\xc7\x0a", b"\x10\x00\xc7\x00"]))
    elif how == "random":
        b = bytearray(draw(st.binary(min_size=0, max_size=200)))
    return bytes(b)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(frames(), st.sampled_from([("bounded", 3), ("bounded", 2), ("paper", 1)]),
       st.integers(0, 20), st.sets(st.sampled_from([1, 2, 3])), st.data())
def test_compiled_tx_and_rx_equal_golden(frame, cv, k, versions, data):
    codec, version = cv
    k = k if k else 10
    lo, hi = golden.k_range(codec)
    gc = golden.Counters()
    want = golden.tx_frame(frame, k=k, codec=codec, counters=gc, version=version)
    got, cnt = _tx(frame, k, codec, version=version)
    assert got == want
    assert cnt.tolist() == _golden_counts(gc).tolist()
    wire = _mangle(data.draw, want if want is not None else frame)
    # The receiver accepts the version sent, and a drawn set of others (any mask).
    versions = tuple(versions | {version}) if data.draw(st.booleans()) else tuple(versions)
    gc = golden.Counters()
    want_rx = golden.rx_frame(wire, counters=gc, versions=versions)
    got_rx, cnt = _rx(wire, versions=versions)
    assert got_rx == want_rx
    assert cnt.tolist() == _golden_counts(gc).tolist()


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(frames(), min_size=1, max_size=30), st.booleans())
def test_compiled_stream_offsets_equal_tcp_align(frames_, enable):
    ref = StreamOffsets()
    fl = fp.FlowTable()
    cnt = np.zeros((1, len(fp.COLUMNS)), np.int64)
    for f in frames_:
        ref.observe(f, 10 if enable else None)
        BUF.inbuf[:len(f)] = np.frombuffer(f, np.uint8)
        fp.observe(BUF.inbuf, len(f), 10 if enable else -1, fl.keys, fl.isn, fl.state, cnt, 0)
    c = ref.counts
    assert (cnt[0, fp.TRACKED], cnt[0, fp.MISALIGNED], cnt[0, fp.UNTRACKED]) == \
        (c.tracked, c.misaligned, c.untracked)


def test_a_stream_through_both_engines_is_the_golden_roundtrip():
    from inceptionn.drivers.tcp_frames import gradient_frames, stream_payload
    x = np.random.default_rng(1).normal(0, 0.05, 50_000).astype(np.float32)
    for codec in ("bounded", "paper"):
        out = []
        for f in gradient_frames(x, mss=8948):
            w, _ = _tx(f, 10, codec)
            (h, bad), _ = _rx(w, versions=(golden.CODEC_VERSION[codec],))
            assert not bad
            out.append(h)
        assert stream_payload(out) == golden.roundtrip(x, 10, codec).tobytes()


def test_the_sampled_check_catches_a_difference():
    """The bridge's sampled check (check_every) raises on a frame the kernels got wrong."""
    from inceptionn.drivers.tcp_frames import gradient_frames
    from inceptionn.drivers.mac_table import MacTable
    from inceptionn.drivers.nic_workers import CompiledSwitch, GoldenMismatch
    import threading
    cs = CompiledSwitch(fds=[-1, -1], macs=["02:00:00:00:00:01", "02:00:00:00:00:02"],
                        macs_table=MacTable({}), lock=threading.Lock(), k=10, codec="bounded",
                        dscp=10, enable=True, deliver_flagged=False, check_every=1, stop_fd=-1)
    f = gradient_frames(np.ones(100, np.float32) * 0.1)[0]
    b = cs.bufs[0]
    b.inbuf[:len(f)] = np.frombuffer(f, np.uint8)
    w, _ = _tx(f, 10, "bounded")
    (h, _), _ = _rx(w)
    for i, data in enumerate((f, w, h)):
        getattr(b, ("inbuf", "wire", "host")[i])[:len(data)] = np.frombuffer(data, np.uint8)
        b.state[i] = len(data)
    cs._check(0, b)                          # right: passes
    assert cs.checked == 1
    b.host[len(h) - 1] ^= 1
    with pytest.raises(GoldenMismatch, match="RX"):
        cs._check(0, b)
    b.host[len(h) - 1] ^= 1
    b.wire[60] ^= 1
    with pytest.raises(GoldenMismatch, match="TX"):
        cs._check(0, b)
