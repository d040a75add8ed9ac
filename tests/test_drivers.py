"""Host-side drivers: HDC training, gradient frames and pcaps, socket tagging."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

from inceptionn.drivers import tcp_frames as F
from inceptionn.golden.frames import frame_fields
from inceptionn import gradients as hdc
from inceptionn.drivers import sockets as S


# ---------------------------------------------------------------- HDC network

def test_hdc_shape_matches_paper():
    net = hdc.HDCNet(seed=0)
    # Five fully connected layers, four hidden layers of 500 units.
    assert len(net.params) == 2 * 5
    assert net.layers[1:-1] == (500, 500, 500, 500)
    assert net.num_params == 64 * 500 + 3 * 500 * 500 + 500 * 10 + 4 * 500 + 10


def test_hdc_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    net = hdc.HDCNet((6, 7, 5, 3), seed=1)
    x = rng.random((4, 6)).astype(np.float32)
    y = np.array([0, 2, 1, 2])
    _, grads = net.loss_and_grads(x, y)
    for pi, idx in [(0, (2, 3)), (2, (4, 1)), (4, (1, 2)), (5, (0,))]:
        p = net.params[pi]
        keep = p[idx]
        eps = np.float32(1e-2)
        p[idx] = keep + eps
        up, _ = net.loss_and_grads(x, y)
        p[idx] = keep - eps
        down, _ = net.loss_and_grads(x, y)
        p[idx] = keep
        numeric = (up - down) / (2 * float(eps))
        assert abs(numeric - float(grads[pi][idx])) < 2e-3 + 2e-2 * abs(numeric)


def test_hdc_training_learns_and_is_deterministic():
    a = hdc.train(120, seed=5)
    b = hdc.train(120, seed=5)
    assert a.acc_after > a.acc_before + 0.5
    assert a.acc_after > 0.85
    assert np.mean(a.losses[-10:]) < 0.5 * a.losses[0]
    assert set(a.captures) == {"early", "mid", "late"}
    assert [s for s, _ in a.captures.values()] == [0, 60, 119]
    for name, (step, g) in a.captures.items():
        assert g.dtype == np.float32 and g.size == a.net.num_params
        assert np.all(np.isfinite(g)) and np.any(g != 0)
        assert np.array_equal(g, b.captures[name][1])
    # Gradients shrink as training converges.
    assert np.abs(a.captures["late"][1]).mean() < np.abs(a.captures["early"][1]).mean()


def test_hdc_bad_arguments():
    with pytest.raises(ValueError, match="3 steps"):
        hdc.train(2)
    with pytest.raises(ValueError, match="batch"):
        hdc.train(10, batch=0)
    with pytest.raises(ValueError, match="width"):
        hdc.HDCNet((64,))


# ---------------------------------------------------------------- frames and pcaps

def _grads(n, seed=0):
    return np.random.default_rng(seed).normal(0, 1e-3, n).astype(np.float32)


def test_gradient_frames_are_a_valid_tcp_stream():
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether

    g = _grads(1000)  # 4000 bytes -> 1448 + 1448 + 1104
    frames = F.gradient_frames(g, seq=0xFFFFF000)
    assert [len(frame_fields(f).payload) for f in frames] == [1448, 1448, 1104]
    assert len(frames[0]) == 14 + 20 + 20 + 1448
    assert F.stream_payload(frames) == g.tobytes()
    seqs = [Ether(f)[TCP].seq for f in frames]
    assert seqs == [0xFFFFF000, (0xFFFFF000 + 1448) & 0xFFFFFFFF, (0xFFFFF000 + 2896) & 0xFFFFFFFF]
    for f in frames:
        p = Ether(f)
        assert p[IP].tos == 0x28 and p[IP].tos >> 2 == 10
        assert F.checksums_ok(f) == (True, True)
    assert F.gradient_frames(np.zeros(0, np.float32)) == []


def _scapy_frames(data, *, mss, tos, seq, ack, src_mac, dst_mac, src_ip, dst_ip, sport, dport,
                  ip_id, vlan):
    """What gradient_frames gives, built field by field by scapy."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw
    out = []
    for i, off in enumerate(range(0, len(data), mss)):
        eth = Ether(src=src_mac, dst=dst_mac)
        if vlan is not None:
            eth = eth / Dot1Q(vlan=vlan)
        out.append(bytes(eth / IP(src=src_ip, dst=dst_ip, tos=tos, id=(ip_id + i) & 0xFFFF,
                                  flags="DF", ttl=64)
                         / TCP(sport=sport, dport=dport, seq=(seq + off) & 0xFFFFFFFF, ack=ack,
                               flags="PA", window=502)
                         / Raw(data[off:off + mss])))
    return out


@pytest.mark.parametrize("kw", [
    {},
    {"seq": 0xFFFFF000, "ip_id": 0xFFFE, "mss": 1000},
    {"vlan": 7, "tos": 0x2B, "src_ip": "192.168.7.200", "dst_ip": "172.16.0.9",
     "src_mac": "0a:1b:2c:3d:4e:5f", "sport": 65535, "dport": 1, "ack": 0xDEADBEEF},
    {"mss": 8948},
])
def test_gradient_frames_equal_scapys_frames_byte_for_byte(kw):
    g = _grads(3001, seed=5)          # an odd byte count in the last segment for mss 1000
    data = g.tobytes()[:-1] if kw.get("mss") == 1000 else g.tobytes()
    args = dict(mss=F.MSS, tos=0x28, seq=1000, ack=1, src_mac="02:00:00:00:00:01",
                dst_mac="02:00:00:00:00:02", src_ip="10.0.0.1", dst_ip="10.0.0.2",
                sport=40000, dport=5201, ip_id=1, vlan=None)
    args.update(kw)
    assert F.gradient_frames(data, **args) == _scapy_frames(data, **args)


def test_checksums_ok_detects_corruption():
    f = bytearray(F.gradient_frames(_grads(100))[0])
    f[-1] ^= 0x01  # payload byte: TCP checksum now wrong, IP header still right
    assert F.checksums_ok(bytes(f)) == (True, False)
    f[-1] ^= 0x01
    f[14 + 8] ^= 0x01  # TTL byte: IP checksum wrong
    assert F.checksums_ok(bytes(f))[0] is False


def test_vlan_frames_and_parse_fields():
    f = F.gradient_frames(_grads(10), vlan=7, tos=0x2B)[0]
    fields = frame_fields(f)
    assert fields.vlan and fields.l3 == 18 and fields.l4 == 38
    assert fields.tos == 0x2B and fields.proto == 6
    assert fields.ip_total_len == 20 + 20 + 40
    assert F.checksums_ok(f) == (True, True)


def test_frames_bad_input():
    with pytest.raises(ValueError, match="float32"):
        F.gradient_frames(np.zeros(4, np.float64))
    with pytest.raises(ValueError, match="mss"):
        F.gradient_frames(b"1234", mss=0)
    with pytest.raises(ValueError, match="IPv4"):
        frame_fields(b"\x00" * 12 + b"\x86\xdd" + b"\x00" * 40)
    with pytest.raises(ValueError, match="too short"):
        frame_fields(b"\x00" * 10)
    frames = F.gradient_frames(_grads(1000))
    with pytest.raises(ValueError, match="sequence"):
        F.stream_payload([frames[0], frames[2]])


def test_pcap_roundtrip_keeps_nanosecond_timestamps(tmp_path):
    frames = F.gradient_frames(_grads(2000))
    times = F.line_rate_timestamps(frames, gbps=10.0, start_ns=1_700_000_000_123_456_789)
    # A 1502-byte frame plus preamble, FCS and gap lasts 1220.8 ns at 10 Gb/s.
    assert times[1] - times[0] in (1220, 1221)
    path = tmp_path / "g.pcap"
    F.write_pcap(path, frames, times)
    back, back_times = F.read_pcap(path)
    assert back == frames and back_times == times
    # scapy's own reader sees Ethernet frames with the same times.
    from scapy.utils import rdpcap
    pkts = rdpcap(str(path))
    assert len(pkts) == len(frames) and bytes(pkts[3]) == frames[3]
    assert int(pkts[0].time * 10**9) == times[0]


def test_pcap_reads_microsecond_files(tmp_path):
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    frames = F.gradient_frames(_grads(50))
    pkt = Ether(frames[0])
    pkt.time = 12.5
    path = tmp_path / "us.pcap"
    wrpcap(str(path), [pkt])
    back, times = F.read_pcap(path)
    assert back == frames[:1] and times == [12_500_000_000]
    with pytest.raises(ValueError, match="timestamps"):
        F.write_pcap(tmp_path / "x.pcap", frames, [0, 1])


# ---------------------------------------------------------------- socket tagging

@pytest.fixture
def tcp_pair():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname(), timeout=5)
    acc, _ = srv.accept()
    yield cli, acc
    for s in (cli, acc, srv):
        s.close()


def _tos(s):
    return s.getsockopt(socket.IPPROTO_IP, socket.IP_TOS)


def test_tag_untag_tcp(tcp_pair):
    cli, _ = tcp_pair
    assert not S.is_tagged(cli)
    old = S.tag_socket(cli)
    assert old == 0 and _tos(cli) == 0x28 and S.is_tagged(cli) and S.get_dscp(cli) == 10
    S.untag_socket(cli)
    assert _tos(cli) == 0 and not S.is_tagged(cli)
    S.tag_socket(cli, dscp=12)
    assert _tos(cli) == 12 << 2 and S.is_tagged(cli, 12) and not S.is_tagged(cli)


def test_tag_keeps_ecn_bits_udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0xB8 | 0x01)  # EF + ECT(1)
        assert S.tag_socket(u) == 0xB9
        assert _tos(u) == 0x29
        S.untag_socket(u)
        assert _tos(u) == 0x01


def test_context_manager_restores_previous_dscp(tcp_pair):
    cli, acc = tcp_pair
    cli.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0xB8)
    with S.compressed(cli) as s:
        assert s is cli and _tos(cli) == 0x28
        cli.sendall(b"gradients")
        assert acc.recv(64) == b"gradients"
    assert _tos(cli) == 0xB8
    # Restored on an exception too.
    with pytest.raises(RuntimeError):
        with S.compressed(cli):
            raise RuntimeError("boom")
    assert _tos(cli) == 0xB8


def test_tagging_rejects_unsuitable_sockets():
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s6:
        with pytest.raises(ValueError, match="IPv4"):
            S.tag_socket(s6)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as su:
        with pytest.raises(ValueError, match="IPv4"):
            S.tag_socket(su)
    with pytest.raises(ValueError, match="socket.socket"):
        S.tag_socket(3)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.close()
    with pytest.raises(ValueError, match="closed"):
        S.tag_socket(s)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        for bad in (64, -1, 2.0, True):
            with pytest.raises(ValueError, match="DSCP"):
                S.tag_socket(u, bad)
        assert _tos(u) == 0  # nothing was changed by the rejected calls


_WIRE_SCRIPT = textwrap.dedent(r"""
    import json, socket, struct, subprocess, time
    from inceptionn.drivers import sockets as S
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    cap.bind(("lo", 0))
    cap.settimeout(0.2)
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
    cli = socket.create_connection(srv.getsockname(), timeout=5)
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    acc, _ = srv.accept(); acc.settimeout(5)
    def send(data):
        cli.sendall(data)
        got = b""
        while len(got) < len(data):
            got += acc.recv(65536)
    with S.compressed(cli):
        send(b"A" * 1000)
    send(b"B" * 1000)
    port = cli.getsockname()[1]
    seen = []
    deadline = time.time() + 3
    while time.time() < deadline:
        try:
            pkt = cap.recv(65536)
        except socket.timeout:
            break
        ip = pkt[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6 or struct.unpack("!H", ip[ihl:ihl + 2])[0] != port:
            continue
        doff = (ip[ihl + 12] >> 4) * 4
        payload = ip[ihl + doff:struct.unpack("!H", ip[2:4])[0]]
        if payload:
            seen.append([ip[1], payload[:1].decode()])
    print(json.dumps(seen))
""")


def test_tagged_socket_traffic_carries_tos_on_the_wire():
    if os.geteuid() != 0:
        pytest.skip("capturing on loopback needs root (a network namespace and a packet socket)")
    ns = f"inceptionn-test-{uuid.uuid4().hex[:8]}"
    add = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if add.returncode != 0:
        pytest.skip(f"`ip netns add` does not work here: {add.stderr.strip()}")
    try:
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", _WIRE_SCRIPT],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        seen = json.loads(out.stdout)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    tagged = {tos for tos, mark in seen if mark == "A"}
    plain = {tos for tos, mark in seen if mark == "B"}
    assert tagged == {0x28}
    assert plain == {0x00}
