"""`inceptionn nic bridge` and `inceptionn mark` as a user runs them: separate processes,
signals, a kill -9 in the middle, and unmodified programs tagged by port."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers.tcp_frames import read_pcap
from inceptionn.drivers.netns import netns_available
from bridge_cli import wait_started

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

CLI = [sys.executable, "-m", "inceptionn"]

RECEIVER = """
import socket, sys
l = socket.create_server(("0.0.0.0", 5000)); l.settimeout(30)
c, _ = l.accept(); c.settimeout(30)
data = bytearray()
while chunk := c.recv(1 << 16):
    data += chunk
open(sys.argv[1], "wb").write(data)
"""

# An unmodified program: a plain socket, no ToS; writes of whole floats. The first float
# goes alone (nothing is in flight, so Nagle sends it at once): a segment too short to be
# worth compressing, which TX forwards with its DSCP set to 0 (the spec's fall-back). Under
# load TCP makes such segments by itself; this one makes every run take that path.
SENDER = """
import socket, sys, time, numpy as np
x = np.load(sys.argv[1])
for _ in range(100):
    try:
        s = socket.create_connection(("10.77.0.2", 5000), timeout=30); break
    except OSError:
        time.sleep(0.05)
s.sendall(x[:1].tobytes()); s.sendall(x[1:].tobytes()); s.close()
"""


def _script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(p))}"


@pytest.mark.long
@pytest.mark.skipif(shutil.which("nft") is None,
                    reason="the nft command is missing (`make setup` installs nftables as root)")
def test_bridge_carries_an_unmodified_program_tagged_by_mark(tmp_path):
    x = np.random.default_rng(0).normal(0, 0.05, 300_000).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    recv = _script(tmp_path, "recv.py", RECEIVER) + f" {tmp_path / 'got.bin'}"
    send = _script(tmp_path, "send.py", SENDER) + f" {tmp_path / 'x.npy'}"
    mark = shlex.join(CLI + ["mark", "add", "--port", "5000"])
    res = subprocess.run(CLI + ["nic", "bridge", "--pcap-host", str(tmp_path / "host.pcap"),
                                "--run", "1", f"{mark} && {recv}",
                                "--run", "0", f"{mark} && {send}"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = np.fromfile(tmp_path / "got.bin", dtype=np.float32).view(np.uint32)
    # Each value went through the codec, or (a segment too short to be worth compressing:
    # TX's fall-back) arrived exact.
    rt = golden.roundtrip(x, 10).view(np.uint32)
    assert got.size == x.size and np.all((got == rt) | (got == x.view(np.uint32)))
    assert np.mean(got == rt) > 0.99
    rows = [r.split() for r in res.stdout.splitlines() if re.match(r"\s+[01]\s", r)]
    header = res.stdout.splitlines()[[i for i, r in enumerate(res.stdout.splitlines())
                                      if r.strip().startswith("host ")][-1]]
    cols = re.split(r"\s{2,}", header.strip())
    port0, port1 = (dict(zip(cols, r)) for r in rows[:2])
    assert int(port0["compressed"]) > 100 and port0["misaligned"] == "0"
    # Both directions were tagged (data one way, ACKs the other): every TCP frame a host
    # sent carries ToS 0x28. The host capture also holds what each host received, and
    # there a fall-back frame arrives with DSCP 0, as the spec says: exactly one such
    # frame per fall-back, each the twin of a tagged frame its sender sent (same IP id
    # and TCP sequence number), and nothing else untagged.
    tcp = [f for f in read_pcap(tmp_path / "host.pcap")[0]
           if f[12:14] == b"\x08\x00" and f[23] == 6]
    assert {f[15] for f in tcp} <= {0x28, 0x00}
    def ident(f):
        return f[18:20], f[26:34], f[38:42]   # IP id, addresses, TCP sequence number
    untagged = [ident(f) for f in tcp if f[15] == 0]
    tagged = {ident(f) for f in tcp if f[15] == 0x28}
    fallbacks = int(port0["fall-back"]) + int(port1["fall-back"])
    assert fallbacks >= 1 and len(untagged) == fallbacks, (fallbacks, len(untagged))
    assert all(u in tagged for u in untagged)


def _start_bridge(*extra):
    p = subprocess.Popen(CLI + ["nic", "bridge", "--duration", "60", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, pids = wait_started(p)
    assert len(pids) == 2, lines
    return p, pids


def _gone(pid, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.05)
    return False


def test_sigusr1_prints_counters_and_sigterm_stops_cleanly():
    p, pids = _start_bridge()
    os.kill(p.pid, signal.SIGUSR1)
    header = p.stdout.readline()
    assert "wire ratio" in header and "misaligned" in header
    assert p.stdout.readline().split()[0] == "0"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 143 and "stopping on SIGTERM" in err
    assert "wire ratio" in out
    assert all(_gone(pid) for pid in pids)


@pytest.mark.long
def test_kill_9_leaves_nothing_and_the_next_run_works():
    p, pids = _start_bridge()
    p.kill()
    p.communicate(timeout=10)
    assert all(_gone(pid) for pid in pids), "namespace holders outlived the bridge"
    taps = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not re.search(rf"i{p.pid % 100000:05d}\d\dh\d", taps)
    res = subprocess.run(CLI + ["nic", "bridge", "--run", "1", "ip -o addr show nic0"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "10.77.0.2/24" in res.stdout


@pytest.mark.parametrize("argv, message", [
    (["nic", "bridge", "--hosts", "17"], "invalid choice"),
    (["nic", "bridge", "--mtu", "4000"], "invalid choice"),
    (["nic", "bridge", "--run", "5", "true"], "--run host 5"),
    (["nic", "bridge", "--drop", "1.5"], "--drop"),
    (["mark", "add"], "mark add needs --port"),
    (["mark", "add", "--port", "70000"], "port range"),
    (["mark", "del", "--port", "4000-3000"], "port range"),
])
def test_bad_arguments_are_clear_errors(argv, message):
    res = subprocess.run(CLI + argv, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and message in res.stderr, res.stderr


def _huge_npy(tmp_path):
    p = tmp_path / "huge.npy"
    with open(p, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (10**11,)})
        f.write(b"\0" * 16)
    return str(p)


def _late_pcap(tmp_path):
    """A microsecond pcap whose one frame is stamped 0xFFFFFFFF s and 0xFFFFFFFF us:
    read fine, but past what a pcap can hold once normalized to ns."""
    import struct
    p = tmp_path / "late.pcap"
    frame = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 46
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                  + struct.pack("<IIII", 0xFFFFFFFF, 0xFFFFFFFF, len(frame), len(frame)) + frame)
    return str(p)


@pytest.mark.parametrize("make_argv, message", [
    (lambda t: ["roundtrip", _huge_npy(t), str(t / "o.npy")], "the header claims shape"),
    (lambda t: ["stats", _huge_npy(t)], "the header claims shape"),
    (lambda t: ["nic", "tx", _late_pcap(t), str(t / "o.pcap")], "past what a pcap holds"),
    (lambda t: ["nic", "bridge", "--pcap-wire", str(t / "missing" / "w.pcap")], "does not exist"),
    (lambda t: ["nic", "bridge", "--pcap-host", str(t)], "cannot write there"),
    (lambda t: ["nic", "bridge", "--pcap-wire", "/proc/x.pcap"], "cannot write there"),
    (lambda t: ["nic", "bridge", "--pcap-host", "/sys/x.pcap"], "cannot write there"),
    (lambda t: ["nic", "bridge", "--duration", "nan"], "--duration"),
    (lambda t: ["nic", "bridge", "--duration", "-1"], "--duration"),
    (lambda t: ["nic", "bridge", "--rate", "1e-12"], "--rate"),
    (lambda t: ["nic", "bridge", "--rate", "inf"], "--rate"),
    (lambda t: ["nic", "bridge", "--drop", "nan"], "--drop"),
    (lambda t: ["nic", "bridge", "--seed", "-1"], "--seed"),
])
def test_bad_numbers_and_files_are_one_line_before_any_host_exists(tmp_path, make_argv, message):
    res = subprocess.run(CLI + make_argv(tmp_path), capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.count("\n") == 1 and message in res.stderr, res.stderr
    assert "bridge up" not in res.stdout        # no namespace was built


@pytest.mark.long
def test_a_full_disk_under_a_capture_is_one_line():
    """--pcap-wire /dev/full: the capture's header fails at the bridge's teardown (the
    write is buffered); one line naming the file, status 2, no traceback."""
    res = subprocess.run(CLI + ["nic", "bridge", "--pcap-wire", "/dev/full", "--duration", "0.3"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.count("\n") == 1 and "cannot write /dev/full" in res.stderr, res.stderr


@pytest.mark.long
@pytest.mark.skipif(shutil.which("nft") is None,
                    reason="the nft command is missing (`make setup` installs nftables as root)")
def test_mark_del_removes_only_its_own_rules():
    """Inside a fresh namespace (nftables state is per network namespace): rules and
    chains someone else put in the `inet inceptionn` table survive `mark del`."""
    from inceptionn.drivers.netns import Namespace
    ns = Namespace()
    try:
        def cli(*argv):
            return ns.run(CLI + list(argv), check=False)

        def nft(*argv):
            return ns.run(["nft", *argv], check=False)

        assert cli("mark", "add", "--port", "5000").returncode == 0
        assert nft("add", "chain", "inet", "inceptionn", "other",
                   "{ type filter hook input priority 0; }").returncode == 0
        assert nft("add", "rule", "inet", "inceptionn", "other", "tcp", "dport", "22",
                   "counter").returncode == 0
        assert nft("add", "rule", "inet", "inceptionn", "tag", "udp", "dport", "53",
                   "counter").returncode == 0
        res = cli("mark", "del")
        assert res.returncode == 0 and "removed ports 5000-5000" in res.stdout, res.stderr
        left = nft("list", "table", "inet", "inceptionn").stdout
        assert "dport 22 counter" in left and "dport 53 counter" in left, left
        assert "dscp set" not in left
        assert cli("mark", "list").stdout == ""
        # With only its own rules left, the table goes.
        assert nft("delete", "table", "inet", "inceptionn").returncode == 0
        assert cli("mark", "add", "--port", "6000-6001").returncode == 0
        assert cli("mark", "del", "--port", "6000-6001").returncode == 0
        assert nft("list", "table", "inet", "inceptionn").returncode != 0
    finally:
        ns.close()
