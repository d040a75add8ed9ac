"""No single host can break the software NIC: a link going down, forged source MACs, a
flood of made-up MACs, a Bridge made by a thread that then exits, and `--run` commands
that try to outlive the bridge."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import icmp_echo, stream_floats
from bridge_cli import wait_started

_why = netns_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}")

CLI = [sys.executable, "-m", "inceptionn"]
X = np.random.default_rng(5).normal(0, 0.05, 200_000).astype(np.float32)


def _same_bits(a, b):
    return np.array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


def _send_raw(frames):
    """A function for Bridge.call: put raw Ethernet frames on nic0 of the host."""
    def body():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        with s:
            s.bind(("nic0", 0))
            for f in frames:
                s.send(f)
    return body




def _frame(dst, src, payload=b"\0" * 46, ethertype=b"\x88\xb5"):
    return bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + ethertype + payload


def test_a_host_whose_link_is_down_stops_nobody():
    """Host 1's link down: frames for it (ARP broadcasts, unicast) fail with EIO; they are
    dropped and counted, and host 0 still reaches host 2."""
    with Bridge(3) as br:
        br.run(1, "ip link set nic0 down")
        for _ in range(2):   # broadcasts (ARP) and unicast to host 1, whose TAP says EIO
            br.call(0, _send_raw([_frame(br.mac(1), br.mac(0)), _frame("ff:ff:ff:ff:ff:ff", br.mac(0))]))
        assert br.call(0, icmp_echo, br.addr(2), b"ping") == b"ping"
        got = stream_floats(br, 0, 2, X)
        c = br.counters()                      # raises if the switch had stopped
        br.run(1, "ip link set nic0 up")
        assert br.call(1, icmp_echo, br.addr(0), b"back") == b"back"
    assert _same_bits(got.received, golden.roundtrip(X, 10))
    assert c[1]["host_errors"] >= 2, c[1]


def test_a_forged_source_mac_is_dropped_and_counted():
    """Host 2 claims host 1's MAC: its frame is dropped, host 1 keeps its traffic."""
    with Bridge(3) as br:
        br.call(2, _send_raw([_frame("ff:ff:ff:ff:ff:ff", br.mac(1))] * 3))
        got = stream_floats(br, 0, 1, X)
        c = br.counters()
    assert _same_bits(got.received, golden.roundtrip(X, 10))
    assert c[2]["forged"] == 3, c[2]
    assert c[2]["to_host_bytes"] < X.nbytes // 10      # host 2 did not get the stream
    assert c[1]["rx_decompressed"] == c[0]["tx_compressed"] > 0


def test_mac_table_is_bounded_and_ages():
    """Random source MACs from one host fill at most `mac_limit` entries, and learned
    entries are forgotten after `mac_age` seconds."""
    rng = np.random.default_rng(9)
    macs = [":".join(f"{b:02x}" for b in [0x06] + list(rng.integers(0, 256, 5))) for _ in range(600)]
    with Bridge(2, mac_limit=100, mac_age=1.0) as br:
        br.call(1, _send_raw([_frame("ff:ff:ff:ff:ff:ff", m) for m in macs]))
        deadline = time.monotonic() + 20
        while br.counters()[1]["from_host_frames"] < 600 and time.monotonic() < deadline:
            time.sleep(0.05)
        size = br.mac_table_size()
        assert 0 < size <= 100, size
        time.sleep(1.5)
        br.call(0, _send_raw([_frame("ff:ff:ff:ff:ff:ff", br.mac(0))]))  # a frame ages the table
        time.sleep(0.3)
        assert br.mac_table_size() == 0
        c = br.counters()
    assert c[1]["mac_table_full"] >= 500


def test_bridge_made_by_a_thread_that_exits_keeps_working():
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("br", Bridge(2).start()))
    t.start()
    t.join()
    br = box["br"]
    try:
        time.sleep(0.3)
        got = stream_floats(br, 0, 1, X)
        assert _same_bits(got.received, golden.roundtrip(X, 10))
    finally:
        assert br.close() is None


def _start(tmp_path, *extra):
    """`inceptionn nic bridge` running a background `sleep` in each host whose pid it
    writes to a file; the bridge process and those pids."""
    runs = []
    for i in range(2):
        runs += ["--run", str(i), f"sleep 300 & echo $! > {tmp_path}/pid{i}; sleep 301; true"]
    p = subprocess.Popen(CLI + ["nic", "bridge", *runs, *extra], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines, holders = wait_started(p)
    deadline = time.monotonic() + 20
    while not all((tmp_path / f"pid{i}").exists() and (tmp_path / f"pid{i}").read_text().strip()
                  for i in range(2)):
        assert time.monotonic() < deadline, "the --run commands did not start"
        time.sleep(0.05)
    sleeps = [int((tmp_path / f"pid{i}").read_text()) for i in range(2)]
    return p, holders + sleeps


def _gone(pid, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_run_commands_die_with_the_bridge(tmp_path, sig):
    p, pids = _start(tmp_path)
    os.kill(p.pid, sig)
    p.wait(timeout=30)
    p.stdout.close()
    p.stderr.close()
    left = [pid for pid in pids if not _gone(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"outlived the bridge ({sig.name}): {left}"
