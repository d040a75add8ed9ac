"""The software NIC in the data path of real Linux TCP between network namespaces.

Every stream here is sent by the kernel's own TCP stack through TAP devices, the bridge's
TX engine, the wire and the RX engine. Needs root (network namespaces, TAP); skipped with
the reason where the machine has neither.
"""

import os
import socket

import numpy as np
import pytest

from inceptionn import golden, gradients
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import gradient_mss, icmp_echo, stream_bytes, stream_floats

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

STREAM_BYTES = 50 << 20


@pytest.fixture(scope="module")
def grads():
    """The HDC demo's real gradients (all captures), tiled to 50 MB."""
    g = gradients.real_gradients(quiet=True).all()
    return np.resize(g, STREAM_BYTES // 4)


def _same_bits(a, b):
    return np.array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


def _kernel_errors(br, i):
    s = br.snmp(i)
    return {"Ip.InHdrErrors": s["Ip"]["InHdrErrors"], "Tcp.InErrs": s["Tcp"]["InErrs"],
            "Tcp.InCsumErrors": s["Tcp"]["InCsumErrors"], "Udp.InCsumErrors": s["Udp"]["InCsumErrors"]}


@pytest.mark.parametrize("mtu", [1500, 9000])
@pytest.mark.parametrize("k", [10, 6])
def test_gradient_stream_is_the_golden_roundtrip(grads, mtu, k):
    with Bridge(2, mtu=mtu, k=k) as br:
        res = stream_floats(br, 0, 1, grads)
        c = br.counters()
        errs = [_kernel_errors(br, i) for i in range(2)]
    assert _same_bits(res.received, golden.roundtrip(grads, k)), "receiver differs from golden"
    assert errs == [dict.fromkeys(errs[0], 0)] * 2, errs
    tx = c[0]
    assert tx["misaligned"] == 0 and tx["untracked"] == 0
    assert tx["tagged_tcp_segments"] >= STREAM_BYTES // gradient_mss(mtu)
    assert tx["tx_compressed"] >= tx["tagged_tcp_segments"] and tx["tx_fallback"] == 0
    assert c[1]["rx_decompressed"] == tx["tx_compressed"] and c[1]["rx_malformed"] == 0
    assert tx["wire_ratio"] > 3.0, tx["wire_ratio"]


def _raw_stream(br, src, dst, payload, *, family=socket.AF_INET, tos=None, writes=(1, 7, 4093)):
    """Send bytes over a plain TCP socket in odd-sized writes; what the receiver read."""
    def client():
        s = socket.socket(family, socket.SOCK_STREAM)
        if tos is not None and family == socket.AF_INET:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        elif tos is not None:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, tos)
        return s

    pieces, pos, i = [], 0, 0
    while pos < len(payload):
        pieces.append(payload[pos:pos + writes[i % len(writes)]])
        pos, i = pos + len(pieces[-1]), i + 1
    return stream_bytes(br, src, dst, pieces, family=family, client=client)


def test_untagged_random_bytes_cross_unchanged():
    data = np.random.default_rng(1).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()
    with Bridge(2, mtu=1500) as br:
        got = _raw_stream(br, 0, 1, data, writes=(4093, 1, 65537))
        c = br.counters()
    assert got == data
    assert c[0]["tx_compressed"] == 0 and c[0]["tx_bypassed"] > 700
    assert c[0]["tagged_tcp_segments"] == 0




def test_ping_arp_and_ipv6_cross_unchanged():
    with Bridge(2, mtu=9000) as br:
        payload = os.urandom(1000)
        assert br.call(0, icmp_echo, br.addr(1), payload) == payload
        neigh = br.run(0, ["ip", "neigh", "show", br.addr(1)]).stdout
        assert br.mac(1) in neigh, neigh                      # ARP went both ways
        data = os.urandom(1 << 20)
        # IPv6 (the engines match IPv4 only): TCP with the traffic class of a tagged socket.
        got = _raw_stream(br, 0, 1, data, family=socket.AF_INET6, tos=golden.TOS_DEFAULT,
                          writes=(997,))
        assert got == data
        c = br.counters()
    assert c[0]["tx_compressed"] == 0 and c[1]["tx_compressed"] == 0


def test_lossy_wire_retransmits_and_stays_exact(grads):
    x = grads[:(8 << 20) // 4]
    with Bridge(2, mtu=1500, k=10, drop=0.01, seed=7) as br:
        res = stream_floats(br, 0, 1, x)
        c = br.counters()
        retrans = br.snmp(0)["Tcp"]["RetransSegs"]
    assert _same_bits(res.received, golden.roundtrip(x, 10))
    assert c[0]["lost"] > 20 and retrans > 0
    assert c[0]["misaligned"] == 0


@pytest.mark.long
@pytest.mark.parametrize("codec", ["bounded", "paper"])
def test_rtl_engine_in_the_loop_matches_golden(grads, codec):
    x = grads[:(2 << 20) // 4]
    with Bridge(2, mtu=9000, k=10, engine="rtl", codec=codec) as br:
        res = stream_floats(br, 0, 1, x)
        c = br.counters()
    assert _same_bits(res.received, golden.roundtrip(x, 10, codec))
    assert c[0]["tx_version3" if codec == "bounded" else "tx_version1"] == c[0]["tx_compressed"]
    # Every frame went through the Verilated engines (and was checked against golden).
    for port in c:
        assert port["rtl_tx_frames"] == port["from_host_frames"] > 0
        assert port["rtl_rx_frames"] == port["to_host_frames"] + port["host_queue_drops"] > 0
    assert c[0]["tx_compressed"] >= (2 << 20) // gradient_mss(9000)


def test_four_hosts_two_streams_at_once(grads):
    """Four hosts on one switch: MACs learned, two tagged streams cross in parallel."""
    import concurrent.futures as cf
    a, b = grads[:(4 << 20) // 4], grads[(4 << 20) // 4:(8 << 20) // 4]
    with Bridge(4, mtu=9000, k=8) as br:
        with cf.ThreadPoolExecutor(2) as pool:
            fa = pool.submit(stream_floats, br, 0, 3, a, port=5003)
            fb = pool.submit(stream_floats, br, 2, 1, b, port=5004)
            ra, rb = fa.result(), fb.result()
        c = br.counters()
    assert _same_bits(ra.received, golden.roundtrip(a, 8))
    assert _same_bits(rb.received, golden.roundtrip(b, 8))
    assert c[0]["tx_compressed"] > 0 and c[2]["tx_compressed"] > 0
    assert c[3]["rx_decompressed"] == c[0]["tx_compressed"]
    assert c[1]["rx_decompressed"] == c[2]["tx_compressed"]
    assert all(p["misaligned"] == 0 for p in c)


def test_captures_of_the_compiled_switch_hold_every_frame(tmp_path):
    """The wire capture holds every frame put on the wire, the host capture every frame
    the hosts sent and were handed; each wire frame, through golden.rx_frame, is a frame
    a host was handed."""
    switch = "compiled"
    from inceptionn.drivers.tcp_frames import read_pcap
    x = np.random.default_rng(4).normal(0, 0.05, 300_000).astype(np.float32)
    wire_p, host_p = tmp_path / "wire.pcap", tmp_path / "host.pcap"
    with Bridge(2, mtu=9000, pcap_wire=wire_p, pcap_host=host_p, switch=switch) as br:
        assert br.switch == switch
        res = stream_floats(br, 0, 1, x)
    c = br.counters()                  # after close: the captures are complete too
    assert _same_bits(res.received, golden.roundtrip(x, 10))
    wire, _ = read_pcap(wire_p)
    host, _ = read_pcap(host_p)
    assert len(wire) == sum(p["to_wire_frames"] for p in c)
    assert len(host) == sum(p["from_host_frames"] + p["to_host_frames"] for p in c)
    handed = set(host)
    restored = [golden.rx_frame(w)[0] for w in wire]
    assert sum(f in handed for f in restored) >= sum(p["to_host_frames"] for p in c)
    assert sum(golden.packet_matcher(w) is not None and w[golden.packet_matcher(w).payload_offset + 2] == 0xC7
               for w in wire) == c[0]["tx_compressed"] > 0


def test_one_worker_for_every_port(grads):
    """workers=1: one thread polls all ports (for machines with few cores)."""
    x = grads[:(2 << 20) // 4]
    with Bridge(3, mtu=1500, workers=1) as br:
        assert len(br._cs._threads) == 1
        res = stream_floats(br, 2, 0, x)
        assert br.call(1, icmp_echo, br.addr(0), b"one") == b"one"
        c = br.counters()
    assert _same_bits(res.received, golden.roundtrip(x, 10))
    assert c[2]["tx_compressed"] == c[0]["rx_decompressed"] > 0
