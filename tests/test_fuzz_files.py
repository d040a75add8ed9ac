"""Damaged and mutated input files through the CLI (main() in this process): .npy into
`roundtrip` and `stats`, pcap and pcapng into `nic tx` and `nic rx`. Every run ends with
status 0 or 2 and at most one line on stderr; the damaged files the issue listed are
refused by name, and valid pcapng files (Simple Packet Blocks included) are read."""

import struct

import numpy as np
import pytest
from fuzzing import fuzz_settings
from hypothesis import example, given
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from inceptionn import golden
from inceptionn.cli import main

FRAME = bytes(Ether() / IP(tos=0x28) / UDP(sport=1, dport=2) / Raw(np.linspace(
    -0.01, 0.01, 64, dtype=np.float32).tobytes()))


def _run(capsys, argv):
    """(status, stderr) of main(argv); the status is 0 or 2 and stderr one line at most."""
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc in (0, 2), (argv, rc, err)
    assert err.count("\n") <= 1, (argv, err)
    return rc, err


# ---------------------------------------------------------------- pcapng, written here

def _block(btype, body):
    body += bytes(-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


SHB = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
IDB = _block(1, struct.pack("<HHI", 1, 0, 0))
IDB_NS = _block(1, struct.pack("<HHI", 1, 0, 0) + struct.pack("<HHB3x", 9, 1, 9)
                + struct.pack("<HH", 0, 0))


def _epb(frame, ts=1_500_000, iface=0):
    return _block(6, struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                 len(frame)) + frame)


def _spb(frame):
    return _block(3, struct.pack("<I", len(frame)) + frame)


VALID = SHB + IDB + _epb(FRAME) + _spb(FRAME) + _block(5, bytes(8)) + _epb(FRAME, 2_000_000)


def test_pcapng_with_simple_packet_blocks_and_resolutions_is_read(tmp_path):
    p = tmp_path / "v.pcapng"
    p.write_bytes(VALID)
    frames, times, nano = golden.pcap.read_pcap(p)
    assert frames == [FRAME] * 3 and nano
    assert times == [1_500_000_000, 0, 2_000_000_000]       # us; a simple block has no time
    p.write_bytes(SHB + IDB_NS + _epb(FRAME, 7))              # if_tsresol 10^-9
    assert golden.pcap.read_pcap(p)[1] == [7]


def test_a_big_endian_pcapng_is_read(tmp_path):
    def blk(btype, body):
        body += bytes(-len(body) % 4)
        return struct.pack(">II", btype, len(body) + 12) + body + struct.pack(">I", len(body) + 12)
    data = (blk(0x0A0D0D0A, struct.pack(">IHHq", 0x1A2B3C4D, 1, 0, -1))
            + blk(1, struct.pack(">HHI", 1, 0, 0))
            + blk(6, struct.pack(">IIIII", 0, 0, 5, len(FRAME), len(FRAME)) + FRAME))
    p = tmp_path / "be.pcapng"
    p.write_bytes(data)
    assert golden.pcap.read_pcap(p)[:2] == ([FRAME], [5000])


DAMAGED = {
    "cut by 200 bytes": VALID[:-200],
    "random bytes after the header": SHB + bytes(range(7, 250)),
    "a block claiming 4 GiB": SHB + IDB + struct.pack("<II", 6, 0xFFFFFFFC) + bytes(40),
    "an enhanced packet block before any interface block": SHB + _epb(FRAME),
    "a simple packet block before any interface block": SHB + _spb(FRAME),
    "an unknown block type": SHB + IDB + _block(0x1234, b"abcd"),
    "lengths that disagree": SHB + IDB + _epb(FRAME)[:-4] + b"\0\0\0\0",
    "a packet longer than its block": SHB + IDB + _block(6, struct.pack(
        "<IIIII", 0, 0, 0, 5000, 5000) + FRAME),
    "no section header first": IDB + SHB,
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_pcapng_files_are_refused_in_one_line(tmp_path, capsys, name):
    p = tmp_path / "in.pcapng"
    p.write_bytes(DAMAGED[name])
    with pytest.raises(golden.pcap.PcapError):
        golden.pcap.read_pcap(p)
    for direction in ("tx", "rx"):
        rc, err = _run(capsys, ["nic", direction, p, tmp_path / "out.pcap"])
        assert rc == 2 and str(p) in err, (name, err)


def test_damaged_classic_pcap_files_are_refused(tmp_path, capsys):
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    rec = struct.pack("<IIII", 1, 0, len(FRAME), len(FRAME)) + FRAME
    cases = {"cut inside a record": hdr + rec[:30],
             "cut inside a record header": hdr + rec + rec[:9],
             "a record claiming 4 GiB": hdr + struct.pack("<IIII", 1, 0, 2**32 - 1, 60) + FRAME,
             "version 9": hdr[:4] + struct.pack("<H", 9) + hdr[6:] + rec,
             "a header cut short": hdr[:20]}
    for name, data in cases.items():
        p = tmp_path / "in.pcap"
        p.write_bytes(data)
        rc, err = _run(capsys, ["nic", "tx", p, tmp_path / "out.pcap"])
        assert rc == 2 and str(p) in err, (name, err)
    p.write_bytes(struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                  + struct.pack(">IIII", 3, 7, len(FRAME), len(FRAME)) + FRAME)
    assert golden.pcap.read_pcap(p)[:2] == ([FRAME], [3_000_007_000])    # big-endian


def test_special_files_are_not_read(tmp_path, capsys):
    rc, err = _run(capsys, ["nic", "tx", "/dev/zero", tmp_path / "out.pcap"])
    assert rc == 2 and "not a regular file" in err


def _mutate(data, edits):
    b = bytearray(data)
    for kind, pos, value in edits:
        if not b:
            break
        i = pos % len(b)
        if kind == "set":
            b[i] = value
        elif kind == "cut":
            del b[i:]
        elif kind == "insert":
            b[i:i] = bytes([value]) * (1 + value % 7)
        else:
            del b[i:i + 1 + value % 9]
    return bytes(b)


_edits = st.lists(st.tuples(st.sampled_from(["set", "cut", "insert", "delete"]),
                            st.integers(0, 2**16), st.integers(0, 255)), max_size=6)


@fuzz_settings(40)
@given(base=st.sampled_from(["pcapng", "pcap"]), edits=_edits)
@example(base="pcapng", edits=[("cut", len(VALID) - 200, 0)])
def test_mutated_captures_end_in_status_0_or_2(tmp_path_factory, capsys, base, edits):
    tmp = tmp_path_factory.mktemp("cap")
    src = VALID
    if base == "pcap":
        golden.pcap.write_pcap(tmp / "v.pcap", [FRAME, FRAME[:80]], [1, 2])
        src = (tmp / "v.pcap").read_bytes()
    p = tmp / "in.cap"
    p.write_bytes(_mutate(src, edits))
    for direction in ("tx", "rx"):
        _run(capsys, ["nic", direction, p, tmp / "out.pcap"])


# ---------------------------------------------------------------- .npy

def _npy_with_header(header: str, body=b"") -> bytes:
    h = header.encode("latin1")
    h += b" " * (-(10 + len(h) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + body


NPY_CASES = {
    "shape 2^70": _npy_with_header("{'descr': '<f4', 'fortran_order': False, "
                                   "'shape': (1180591620717411303424,), }"),
    "shape 2^70 by 0": _npy_with_header("{'descr': '<f4', 'fortran_order': False, "
                                        "'shape': (1180591620717411303424, 0), }"),
    "a header cut short": _npy_with_header("{'descr': '<f4', 'fortran_order': False, "
                                           "'shape': (10,), }")[:40],
    "a header dict cut short": b"\x93NUMPY\x01\x00" + struct.pack("<H", 30)
                               + b"{'descr': '<f4', 'fortran_or",
    "a negative shape": _npy_with_header("{'descr': '<f4', 'fortran_order': False, "
                                         "'shape': (-3,), }", bytes(12)),
    "an object array": _npy_with_header("{'descr': '|O', 'fortran_order': False, "
                                        "'shape': (1,), }", bytes(8)),
    "version 7": b"\x93NUMPY\x07\x00" + bytes(60),
    "float64": _npy_with_header("{'descr': '<f8', 'fortran_order': False, "
                                "'shape': (2,), }", bytes(16)),
    "not an npy": b"hello",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(NPY_CASES))
def test_damaged_npy_files_are_one_line_errors(tmp_path, capsys, name):
    p = tmp_path / "in.npy"
    p.write_bytes(NPY_CASES[name])
    for argv in (["roundtrip", p, tmp_path / "out.npy"], ["stats", p]):
        rc, err = _run(capsys, argv)
        assert rc == 2 and str(p) in err, (name, err)


def test_infinities_and_nans_are_one_line_of_output(tmp_path, capsys):
    """Found by make fuzz: Inf - Inf in the error statistics printed a RuntimeWarning."""
    p = tmp_path / "x.npy"
    np.save(p, np.array([np.nan, np.inf, -np.inf, 3e38, 0], np.float32))
    for argv in (["stats", p], ["roundtrip", p, tmp_path / "o.npy"]):
        assert _run(capsys, argv) == (0, "")


@fuzz_settings(40)
@given(edits=_edits)
@example(edits=[("cut", 40, 0)])
@example(edits=[("set", 60, ord("9")), ("insert", 60, ord("9"))])
def test_mutated_npy_files_end_in_status_0_or_2(tmp_path_factory, capsys, edits):
    tmp = tmp_path_factory.mktemp("npy")
    np.save(tmp / "v.npy", np.linspace(-1, 1, 50, dtype=np.float32).reshape(5, 10))
    p = tmp / "in.npy"
    p.write_bytes(_mutate((tmp / "v.npy").read_bytes(), edits))
    _run(capsys, ["roundtrip", p, tmp / "out.npy"])
    _run(capsys, ["stats", p])
