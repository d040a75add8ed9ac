"""The TAP offloads (drivers/tso.py): the switch cuts the hosts' 64 KB TCP segments into
the MTU frames their kernels would have sent, and hands a receiving host consecutive
frames of one TCP segment in one write.

The cutting and coalescing kernels are checked byte for byte against frames built with
scapy (no root needed); the bridge, with root, on a live stream: counted in reads and
writes per frame, not timed.
"""

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from inceptionn.drivers import tso
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import stream_bytes, stream_floats
from inceptionn.golden.frames import checksums_ok

MSS = 1000
TS = [("NOP", None), ("NOP", None), ("Timestamp", (1234, 5678))]


def _frames(n, *, last=MSS, seq=1000, ip_id=7):
    """n frames of one TCP segment as a kernel without TSO sends them: MSS bytes each
    (the last `last`), consecutive IDs and sequence numbers, PSH on the last."""
    out = []
    for i in range(n):
        m = MSS if i < n - 1 else last
        pay = bytes((seq + i * MSS + j) & 0xFF for j in range(m))
        f = (Ether(src="02:49:4e:43:00:01", dst="02:49:4e:43:00:02")
             / IP(src="10.77.0.1", dst="10.77.0.2", id=ip_id + i, flags="DF", tos=40)
             / TCP(sport=40000, dport=5000, seq=seq + i * MSS, ack=99, window=512,
                   flags="PA" if i == n - 1 else "A", options=TS) / pay)
        out.append(bytes(f))
    return out


def _gso(frames):
    """The segment a kernel with TSO hands the TAP for those frames: one header (the
    first frame's, PSH as the last's, the whole length), the payloads, a partial checksum."""
    hl = 14 + 20 + 32
    body = b"".join(f[hl:] for f in frames)
    head = bytearray(frames[0][:hl])
    head[47] = frames[-1][47]
    head[16:18] = (len(head) - 14 + len(body)).to_bytes(2, "big")
    head[50:52] = b"\x12\x34"                   # whatever: the switch sums it again
    vnet = bytes([tso.F_NEEDS_CSUM, tso.GSO_TCPV4]) + hl.to_bytes(2, "little") \
        + MSS.to_bytes(2, "little") + (34).to_bytes(2, "little") + (16).to_bytes(2, "little")
    return vnet + bytes(head) + body


def _cut(seg):
    raw = np.zeros(tso.RAW_ROOM, np.uint8)
    raw[:len(seg)] = np.frombuffer(seg, np.uint8)
    out, st = np.zeros(70000, np.uint8), np.zeros(8, np.int64)
    st[tso.PENDING] = len(seg)
    got = []
    while st[tso.PENDING]:
        n = tso.next_frame(raw, out, st)
        assert n > 0
        got.append(bytes(out[:n]))
    return got


@pytest.mark.parametrize("n,last", [(1, 10), (5, MSS), (5, 3), (60, 7)])
def test_cut_gives_the_kernels_frames(n, last):
    want = _frames(n, last=last)
    got = _cut(_gso(want))
    assert len(got) == n
    for g, w in zip(got, want):
        assert g == w
        assert checksums_ok(g) == (True, True)


def test_cut_completes_a_partial_checksum_and_drops_a_malformed_segment():
    f = bytearray(_frames(1, last=333)[0])
    want = bytes(f)
    f[50:52] = b"\0\0"
    vnet = bytes([tso.F_NEEDS_CSUM, tso.GSO_NONE, 0, 0, 0, 0, 34, 0, 16, 0])
    # the pseudo header's sum, as the kernel leaves it
    from inceptionn.golden.fast import _ones_sum
    s = int(_ones_sum(np.frombuffer(want[26:34], np.uint8), np.uint64(6 + len(want) - 34)))
    f[50:52] = s.to_bytes(2, "big")
    assert _cut(vnet + bytes(f)) == [want]
    bad = bytearray(_gso(_frames(3)))
    bad[10 + 12:10 + 14] = b"\x86\xdd"          # a TCPv4 segment that is not IPv4
    raw = np.zeros(tso.RAW_ROOM, np.uint8)
    raw[:len(bad)] = np.frombuffer(bytes(bad), np.uint8)
    st = np.zeros(8, np.int64)
    st[tso.PENDING] = len(bad)
    assert tso.next_frame(raw, np.zeros(70000, np.uint8), st) == -1
    assert st[tso.PENDING] == 0


def _coalesce(frames, to=1):
    agg, ag = np.zeros(tso.AGG_ROOM, np.uint8), np.zeros(8, np.int64)
    writes = []
    for f in frames:
        a = np.frombuffer(f, np.uint8).copy()
        if not tso.coalesce(agg, ag, a, len(f), to):
            if ag[tso.AG_LEN]:
                writes.append((bytes(agg[:tso.seal(agg, ag)]), int(ag[tso.AG_FRAMES])))
            tso.start(agg, ag, a, len(f), to)
    writes.append((bytes(agg[:tso.seal(agg, ag)]), int(ag[tso.AG_FRAMES])))
    return writes


def test_coalesced_frames_cut_back_into_themselves():
    frames = _frames(9, last=77)
    (seg, count), = _coalesce(frames)
    assert count == 9
    assert seg[0] == tso.F_NEEDS_CSUM and seg[1] == tso.GSO_TCPV4
    assert int.from_bytes(seg[4:6], "little") == MSS
    assert int.from_bytes(seg[10 + 16:10 + 18], "big") == len(seg) - 10 - 14
    assert checksums_ok(seg[10:])[0]            # the IP header's checksum is whole
    assert _cut(seg) == frames


def test_coalescing_stops_where_the_segment_does_not_continue():
    a, b = _frames(3), _frames(3, seq=1000 + 3 * MSS, ip_id=10)
    assert [c for _, c in _coalesce(a + b)] == [3, 3]          # PSH closes a segment
    gap = _frames(2, seq=50_000)
    assert [c for _, c in _coalesce(a[:2] + gap)] == [2, 2]    # not the next sequence number
    other = bytearray(a[1])
    other[42:46] = (100).to_bytes(4, "big")                     # another ACK
    assert [c for _, c in _coalesce([a[0], bytes(other)])] == [1, 1]
    single, = _coalesce(a[:1])                                  # one frame: as it is
    assert single == (bytes([tso.F_DATA_VALID]) + bytes(9) + a[0], 1)


def test_only_whole_tcp_frames_are_coalesced():
    """A coalesced segment reaches the host with its checksum unchecked: a frame with a
    wrong sum (IP or TCP) is written alone, for the host's kernel to drop."""
    f = _frames(1)[0]
    assert tso.mergeable(np.frombuffer(f, np.uint8), len(f))
    for off in (24, 50, 60, len(f) - 1):          # IP checksum, TCP checksum, payload
        bad = bytearray(f)
        bad[off] ^= 0x40
        assert not tso.mergeable(np.frombuffer(bytes(bad), np.uint8), len(f))
    udp = bytearray(f)
    udp[23] = 17
    assert not tso.mergeable(np.frombuffer(bytes(udp), np.uint8), len(f))


def test_offload_needs_the_compiled_switch_without_captures(tmp_path):
    with pytest.raises(ValueError, match="offload"):
        Bridge(2, offload=True, pcap_wire=tmp_path / "w.pcap")
    with pytest.raises(ValueError, match="offload"):
        Bridge(2, offload=True, switch="python")
    with pytest.raises(ValueError, match="offload"):
        Bridge(2, offload="yes")


_why = netns_available()


@pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")
def test_bridge_reads_and_writes_segments_not_frames():
    """A compressed stream and an untagged one through the bridge with offloads: the
    sending port reads several MTU frames per read(2), the receiving one writes several
    per write(2), the wire sees MTU frames (the sampled golden check confirms TX and RX on
    them), and what arrives is what the old path delivers: floats within the bound,
    bytes exact. Without offloads each ratio is 1."""
    x = (np.random.default_rng(0).standard_normal(1 << 20) * 1e-3).astype(np.float32)
    data = bytes(range(256)) * 4096
    with Bridge(2, mtu=9000, k=10, check_every=20) as br:
        if not br.offload:
            pytest.skip("this kernel refuses the TAP offloads")
        got = stream_floats(br, 0, 1, x).received
        assert stream_bytes(br, 0, 1, [data]) == data
        tx, rx = br.counters()
    assert np.abs(got - x).max() <= 2.0 ** -10
    assert tx["from_host_frames"] >= 3 * tx["host_reads"]
    assert tx["segmented"] >= tx["from_host_frames"] // 2
    assert rx["to_host_frames"] >= 3 * rx["host_writes"]
    assert tx["to_wire_frames"] == tx["from_host_frames"]
    assert tx["to_wire_bytes"] <= 9014 * tx["to_wire_frames"]
    assert tx["tx_compressed"] > 100 and rx["rx_decompressed"] == tx["tx_compressed"]
    assert tx["golden_checked"] > 0
    assert tx["misaligned"] == 0 and rx["flagged"] == 0 and tx["host_errors"] == 0


@pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")
def test_bridge_without_offload_reads_and_writes_frames(monkeypatch):
    """offload=None falls back to plain TAPs where the kernel refuses the offloads
    (provoked: an ioctl it does not know), and the old path then reads and writes one
    frame at a time."""
    from inceptionn.drivers import netns
    monkeypatch.setattr(netns, "_TUNSETOFFLOAD", 0x400454FF)
    data = bytes(range(256)) * 1024
    with Bridge(2, mtu=9000) as br:
        assert br.offload is False
        assert stream_bytes(br, 0, 1, [data]) == data
        tx, rx = br.counters()
    assert tx["host_reads"] == tx["from_host_frames"] > 20
    assert rx["host_writes"] == rx["to_host_frames"]
    assert tx["segmented"] == 0
