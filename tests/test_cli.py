"""The `inceptionn` command line: roundtrip, stats, nic tx/rx, and its error handling."""

import struct

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw
from scapy.utils import RawPcapReader, rdpcap, wrpcap

from inceptionn import golden
from inceptionn.cli import main


@pytest.fixture
def grads(tmp_path):
    x = np.random.default_rng(0).normal(0, 1e-2, 5003).astype(np.float32)
    path = tmp_path / "g.npy"
    np.save(path, x)
    return x, path


@pytest.mark.parametrize("bound,k,codec", [
    ("2^-10", 10, None), ("-6", 6, "bounded"), ("0.0009765625", 10, "paper"), ("2^-16", 16, None),
    ("2^-20", 20, "paper")])
def test_roundtrip(grads, tmp_path, capsys, bound, k, codec):
    x, path = grads
    out = tmp_path / "out.npy"
    argv = ["roundtrip", str(path), str(out), "--error-bound", bound]
    assert main(argv + (["--codec", codec] if codec else [])) == 0
    y = np.load(out)
    assert y.dtype == np.float32 and y.shape == x.shape
    codec = codec or "bounded"                                   # the default
    assert y.view(np.uint32).tolist() == golden.roundtrip(x, k, codec).view(np.uint32).tolist()
    text = capsys.readouterr().out
    assert f"2^-{k}" in text and f"{codec} codec" in text
    if codec == "bounded":
        assert np.abs(y - x).max() <= 2.0 ** -k


def test_roundtrip_default_and_shape(tmp_path):
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    np.save(tmp_path / "a.npy", x)
    assert main(["roundtrip", str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]) == 0
    y = np.load(tmp_path / "b.npy")
    assert y.shape == (2, 3, 4) and np.array_equal(y, golden.roundtrip(x, 10, "bounded"))


def test_stats(grads, capsys):
    x, path = grads
    assert main(["stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bounded codec" in out
    for k in (6, 8, 10):
        st = golden.band_stats(x, k, "bounded")
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"2^-{k} "))
        assert f"{st.share[2]:.2%}" in line and f"{st.ratio:.3f}" in line
        assert f"{st.max_error[10]:10.3g}" in line and line.endswith(" 0.00%")
    assert main(["stats", str(path), "--codec", "paper"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("2^-10 "))
    assert "paper codec" in out and f"{golden.band_stats(x, 10, 'paper').zeroed_8bit:7.2%}" in line
    assert main(["stats", str(path), "--error-bound", "2^-12", "--error-bound", "-4"]) == 0
    out = capsys.readouterr().out
    assert "2^-12" in out and "2^-4" in out and "2^-10" not in out


@pytest.mark.parametrize("argv,msg", [
    (["roundtrip", "{x}", "{o}", "--error-bound", "0.001"], "power of two"),
    (["roundtrip", "{x}", "{o}", "--error-bound", "2^-127"], "1..126"),
    (["roundtrip", "{x}", "{o}", "--error-bound", "2^-17"], "1..16 for the bounded codec"),
    (["roundtrip", "{x}", "{o}", "--codec", "eb"], "invalid choice"),
    (["stats", "{x}", "--error-bound", "2^-20"], "1..16 for the bounded codec"),
    (["nic", "tx", "{x}", "{o}", "--error-bound", "2^-17"], "1..16 for the bounded codec"),
    (["nic", "rx", "{x}", "{o}", "--codec", "v2"], "invalid choice"),
    (["nic", "rx", "{x}", "{o}", "--versions", "4"], "wire versions among"),
    (["nic", "rx", "{x}", "{o}", "--versions", "1;2"], "wire versions among"),
    (["nic", "rx", "{x}", "{o}", "--versions", "3", "--codec", "any"], "not both"),
    (["nic", "tx", "{x}", "{o}", "--version", "4"], "1, 2 or 3"),
    (["nic", "tx", "{x}", "{o}", "--codec", "paper", "--version", "3"], "--version"),
    (["roundtrip", "{x}", "{o}", "--error-bound", "banana"], "cannot parse"),
    (["stats", "{x}", "--error-bound", "3"], "power of two"),
    (["roundtrip", "{missing}", "{o}"], "cannot read"),
    (["roundtrip", "{f64}", "{o}"], "float32"),
    (["roundtrip", "{junk}", "{o}"], "cannot read"),
    (["roundtrip", "{x}", "{nodir}"], "cannot write"),
    (["stats", "{npz}"], "npz"),
    (["nic", "tx", "{missing}", "{o}"], "cannot read"),
    (["nic", "tx", "{junk}", "{o}"], "cannot read"),
    (["nic", "rx", "{x}", "{o}", "--dscp", "64"], "DSCP"),
    (["nic", "rx", "{x}", "{o}", "--error-bound", "2^-10"], "unrecognized"),
    (["nic", "tx", "{raw_ip}", "{o}"], "not Ethernet"),
    (["nic"], "required"),
    ([], "required"),
    (["frobnicate"], "invalid choice"),
])
def test_errors_exit_2(grads, tmp_path, capsys, argv, msg):
    x, path = grads
    np.save(tmp_path / "f64.npy", x.astype(np.float64))
    np.savez(tmp_path / "a.npz", x=x)
    (tmp_path / "junk.bin").write_bytes(b"this is not a file format\n" * 3)
    wrpcap(str(tmp_path / "raw.pcap"), [IP() / UDP()])          # link type: raw IP
    names = dict(x=path, o=tmp_path / "o.out", missing=tmp_path / "nope.npy",
                 f64=tmp_path / "f64.npy", junk=tmp_path / "junk.bin",
                 nodir=tmp_path / "no" / "dir" / "o.npy", npz=tmp_path / "a.npz",
                 raw_ip=tmp_path / "raw.pcap")
    args = [a.format(**{k: str(v) for k, v in names.items()}) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert msg in err
    assert not (tmp_path / "o.out").exists()


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "roundtrip" in capsys.readouterr().out


def _frames():
    rng = np.random.default_rng(7)
    g = rng.normal(0, 1e-2, 360).astype(np.float32).tobytes()
    big = rng.uniform(2, 9, 100).astype(np.float32).tobytes()
    pkts = [Ether() / IP(tos=0x28) / TCP() / Raw(g),
            Ether() / ARP(),
            Ether() / IP(tos=0x28) / UDP() / Raw(g[:203]),
            Ether() / IP(tos=0x28) / UDP() / Raw(big),                 # fall-back
            Ether() / IP(tos=0x00) / TCP() / Raw(g),                   # other DSCP
            Ether() / IP(tos=0x28) / TCP() / Raw(g * 30)]              # oversize: dropped
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i * 0.125 + 0.000003
    return pkts


@pytest.mark.parametrize("codec", [None, "bounded", "paper"])
def test_nic_tx_rx(tmp_path, capsys, codec):
    pkts = _frames()
    src, mid, dst = (str(tmp_path / n) for n in ("in.pcap", "mid.pcap", "out.pcap"))
    wrpcap(src, pkts)
    argv = ["nic", "tx", src, mid, "--error-bound", "2^-10"] + (["--codec", codec] if codec else [])
    assert main(argv) == 0
    codec = codec or "bounded"
    version = "version1" if codec == "paper" else "version3"
    other = "version3" if codec == "paper" else "version1"
    out = capsys.readouterr().out
    assert "compressed: 2" in out and "dropped: 1" in out and "fallback: 1" in out
    assert "frames_in: 6" in out and "frames_out: 5" in out
    assert f"{version}: 2" in out and f"{other}: 0" in out
    raw = [bytes(p) for p in pkts]
    wire = [golden.tx_frame(f, codec=codec) for f in raw]
    got = rdpcap(mid)
    assert [bytes(p) for p in got] == [w for w in wire if w is not None]
    assert [float(p.time) for p in got] == pytest.approx([float(p.time) for p in pkts[:5]], abs=1e-6)
    reader = RawPcapReader(mid)
    assert reader.linktype == 1
    reader.close()
    # a pcap Wireshark reads: classic magic, version 2.4, snaplen covers jumbo frames
    with open(mid, "rb") as f:
        magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", f.read(24))
    assert (magic, major, minor, linktype) == (0xA1B2C3D4, 2, 4, 1) and snaplen >= 9216

    # RX accepts version 3 only by default: the paper's frames are forwarded unchanged
    # unless the receiver names version 1.
    assert main(["nic", "rx", mid, dst]) == 0
    out = capsys.readouterr().out
    assert f"decompressed: {2 if codec == 'bounded' else 0}" in out
    assert main(["nic", "rx", mid, dst] + (["--versions", "1"] if codec == "paper" else [])) == 0
    out = capsys.readouterr().out
    assert "decompressed: 2" in out and "bad frames out: 0" in out and f"{version}: 2" in out
    back = [bytes(p) for p in rdpcap(dst)]
    assert back == [golden.rx_frame(w, versions=(1, 2, 3))[0] for w in wire if w is not None]
    assert back[1] == raw[1] and back[4] == raw[4]
    assert Ether(back[0])[Raw].load == golden.decoded_payload(bytes(pkts[0][Raw]), 10, codec)
    # An RX restricted to the other version forwards every frame unchanged.
    assert main(["nic", "rx", mid, dst, "--codec", "paper" if codec == "bounded" else "bounded"]) == 0
    assert "decompressed: 0" in capsys.readouterr().out
    assert [bytes(p) for p in rdpcap(dst)] == [w for w in wire if w is not None]
    assert main(["nic", "rx", mid, dst, "--codec", codec]) == 0
    assert "decompressed: 2" in capsys.readouterr().out


def test_nic_dscp_and_empty(tmp_path, capsys):
    pkts = [Ether() / IP(tos=46 << 2) / UDP() / Raw(bytes(400))]
    src, mid = str(tmp_path / "in.pcap"), str(tmp_path / "mid.pcap")
    wrpcap(src, pkts)
    assert main(["nic", "tx", src, mid, "--dscp", "46"]) == 0
    assert "compressed: 1" in capsys.readouterr().out
    assert len(bytes(rdpcap(mid)[0])) < 100
    assert main(["nic", "tx", src, mid]) == 0
    assert "bypassed: 1" in capsys.readouterr().out
    # a capture with no frames stays a valid capture
    empty = tmp_path / "empty.pcap"
    wrpcap(str(empty), [Ether() / ARP()])
    empty.write_bytes(empty.read_bytes()[:24])
    assert main(["nic", "rx", str(empty), mid]) == 0
    assert "frames_in: 0" in capsys.readouterr().out
    assert len(rdpcap(mid)) == 0 and len((tmp_path / "mid.pcap").read_bytes()) == 24


def test_nic_pcapng_and_truncated(tmp_path, capsys):
    from scapy.utils import wrpcapng
    pkt = Ether() / IP(tos=0x28) / UDP() / Raw(bytes(400))
    pkt.time = 1234.5
    src, mid = str(tmp_path / "in.pcapng"), str(tmp_path / "mid.pcap")
    wrpcapng(src, [pkt])
    assert main(["nic", "tx", src, mid]) == 0
    got = rdpcap(mid)
    assert [bytes(p) for p in got] == [golden.tx_frame(bytes(pkt), codec="bounded")]
    assert float(got[0].time) == 1234.5
    # A capture cut by a small snaplen cannot be processed: the frames are incomplete.
    frame = bytes(pkt)
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 100, 1)
    rec = struct.pack("<IIII", 1, 0, 100, len(frame)) + frame[:100]
    (tmp_path / "cut.pcap").write_bytes(hdr + rec)
    assert main(["nic", "tx", str(tmp_path / "cut.pcap"), mid]) == 2
    assert "truncated" in capsys.readouterr().err
    # A record cut short by the end of the file is refused the same way.
    (tmp_path / "short.pcap").write_bytes(hdr + struct.pack("<IIII", 1, 0, 100, 100) + frame[:50])
    rc = main(["nic", "tx", str(tmp_path / "short.pcap"), mid])
    err = capsys.readouterr().err
    assert rc == 2 and "truncated (50 of 100 bytes)" in err
