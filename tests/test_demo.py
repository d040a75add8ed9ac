"""The end-to-end demo on a short training run: real gradients, frames, NIC stage, pcaps,
both value codecs side by side."""

import json

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP
from scapy.utils import rdpcap

from inceptionn import cli
from inceptionn import golden, gradients
from inceptionn.commands import demo
from inceptionn.drivers import tcp_frames as F

STEPS = 60
# The demo as `make demo` runs it, once for the whole file: the Verilated engines at the
# first bound (their models built while the network trains), the golden model at the
# others, real TCP and the collectives; on a short training run and the start of each
# capture (the golden model's Python is most of a full capture's time).
FRAMES = 200


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    cache = tmp_path_factory.mktemp("cache")
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["demo", "--steps", str(STEPS), "--out", str(out), "--cache", str(cache),
                       "--max-frames", str(FRAMES)])
    return rc, buf.getvalue(), out, cache


@pytest.mark.long
def test_demo_prints_table_for_each_codec_and_bound(demo_run):
    rc, text, _, _ = demo_run
    assert rc == 0, text
    for codec in ("bounded", "paper"):
        for k in (6, 8, 10):
            rows = [l for l in text.splitlines() if l.split()[:2] == [codec, f"2^-{k}"] and "|" in l]
            assert len(rows) == 3, text  # early, mid, late
            for l in rows:
                assert l.rstrip().endswith("yes")
                if codec == "bounded":
                    assert " 0.0%     yes" in l          # no 8-bit code decodes to 0
            note = next(l for l in text.splitlines() if l.split()[:3] == [codec, f"2^-{k}:", "max"])
            assert ("within the bound" in note) == (codec == "bounded" or k <= 7), note
    assert "4. Error against the bound" in text
    assert "checksums valid: True" in text


@pytest.mark.long
def test_demo_training_and_summary(demo_run):
    _, _, out, _ = demo_run
    s = json.loads((out / "summary.json").read_text())
    assert s["train_steps"] == STEPS
    assert s["acc_after"] > s["acc_before"] + 0.3
    assert s["captures"] == {"early": 0, "mid": STEPS // 2, "late": STEPS - 1}
    assert len(s["rows"]) == 18
    for r in s["rows"]:
        assert abs(sum(r["share"].values()) - 1.0) < 1e-9
        assert r["payload_ratio"] > r["wire_ratio"] > r["link_ratio"] > 1.0
        assert r["counters"]["tx"]["compressed"] + r["counters"]["tx"]["fallback"] == r["frames"]
        assert r["counters"]["rx"]["malformed"] == 0 and r["counters"]["bad"] == 0
        # The 0-bit band never errs by more than the bound; nothing errs by 2^-6 or more
        # except the 0-bit band at k = 6 (spec section 1: truncation toward zero).
        assert r["max_error_by_band"]["2"] <= 2.0 ** -r["k"]
        if r["codec"] == "bounded":
            assert r["max_abs_error"] <= 2.0 ** -r["k"] and r["zeroed_8bit"] == 0.0
    # Side by side: the same code shares and the same bytes on the wire but for version
    # 3's 4-byte check word per compressed frame; only the paper's codec zeroes 8-bit
    # codes and leaves the bound at 2^-10.
    by = {(r["codec"], r["k"], r["capture"]): r for r in s["rows"]}
    for (codec, k, cap), r in by.items():
        if codec == "paper":
            b = by[("bounded", k, cap)]
            comp = b["counters"]["tx"]["compressed"]
            assert r["share"] == b["share"] and r["counters"]["tx"]["compressed"] == comp
            assert b["payload_out"] == r["payload_out"] + 4 * comp
    assert max(r["zeroed_8bit"] for r in s["rows"] if r["codec"] == "paper" and r["k"] == 10) > 0.5
    assert max(r["max_abs_error"] for r in s["rows"] if r["codec"] == "paper" and r["k"] == 10) > 2.0**-10
    by_k = {k: [r for r in s["rows"] if r["k"] == k and r["codec"] == "bounded"] for k in (6, 8, 10)}
    # A looser bound zeroes more values and compresses better.
    for cap in range(3):
        assert by_k[6][cap]["share"]["2"] >= by_k[8][cap]["share"]["2"] >= by_k[10][cap]["share"]["2"]
        assert by_k[6][cap]["payload_ratio"] >= by_k[10][cap]["payload_ratio"]


@pytest.mark.long
def test_demo_saves_gradients_and_cache_returns_them(demo_run):
    _, _, out, cache = demo_run
    g = gradients.real_gradients(STEPS, 0, cache_dir=cache)
    assert list(g.captures) == ["early", "mid", "late"]
    for name, arr in g.captures.items():
        saved = np.load(out / f"grad_{name}.npy")
        assert saved.dtype == np.float32 and saved.size == 789010
        assert np.array_equal(saved, arr)
    assert g.all().size == 3 * 789010
    assert (out / "gradients.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _streams(frames):
    """Frames grouped by TCP source port (one stream per capture), in order."""
    by_port = {}
    for f in frames:
        l4 = F.frame_fields(f).l4
        by_port.setdefault(int.from_bytes(f[l4:l4 + 2], "big"), []).append(f)
    return by_port


@pytest.mark.long
def test_pcaps_have_tos_checksums_and_the_roundtrip(demo_run):
    _, _, out, _ = demo_run
    sent, t_sent = F.read_pcap(out / "sent.pcap")
    wire, t_wire = F.read_pcap(out / "wire_bounded_k10.pcap")
    host, t_host = F.read_pcap(out / "host_bounded_k10.pcap")
    wire1, _ = F.read_pcap(out / "wire_paper_k10.pcap")
    # Version 3 (bounded) frames are version 1's plus the 4-byte check word when compressed.
    assert len(wire1) == len(wire)
    assert {a - b for a, b in zip(map(len, wire), map(len, wire1))} <= {0, 4}
    assert len(sent) == len(wire) == len(host) == 3 * FRAMES
    assert t_sent == t_wire == t_host and t_sent == sorted(t_sent)
    assert sum(map(len, wire)) < sum(map(len, sent)) / 4

    pkts = rdpcap(str(out / "wire_bounded_k10.pcap"))
    assert len(pkts) == len(wire)
    for i in range(0, len(pkts), 97):  # a spread of frames; scapy is slow per frame
        assert pkts[i][IP].tos == 0x28
        ip_ok, _ = F.checksums_ok(wire[i])
        assert ip_ok
        assert F.checksums_ok(host[i]) == (True, True)
        # The wire frame carries the checksum of the packet as the receiver restores it.
        assert pkts[i][TCP].chksum == int.from_bytes(host[i][50:52], "big")
        assert bytes(pkts[i][TCP].payload)[2:4] == b"\xc7\x0a"       # version 3, k = 10
        assert F.frame_fields(wire1[i]).payload[2:4] == b"\xc5\x0a"     # version 1

    grads = {name: np.load(out / f"grad_{name}.npy") for name in ("early", "mid", "late")}
    streams = _streams(host)
    assert len(streams) == 3
    for (port, frames), (name, g) in zip(sorted(streams.items()), grads.items()):
        payload = F.stream_payload(frames)
        g = g[:FRAMES * (F.MSS // 4)]          # what was sent: the start of the capture
        want = golden.compression_block(g.view(np.uint32), 10, "bounded")[3].tobytes()
        assert payload == want, name
        assert payload != g.tobytes()  # the roundtrip is lossy: something did change


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A cache of the short training run alone (seconds), for the golden-only runs that
    make test keeps."""
    cache = tmp_path_factory.mktemp("trained")
    gradients.real_gradients(STEPS, 0, cache_dir=cache, quiet=True)
    return cache


def test_swapped_nic_stage_is_used_and_checked(trained, tmp_path):
    cache = trained
    calls = []

    def corrupting_nic(frames, k, codec):
        calls.append((k, codec))
        wire, host, info = demo.golden_nic_stage(frames, k, codec)
        h = bytearray(host[5])
        h[-3] ^= 0x40
        host[5] = bytes(h)
        return wire, host, info

    with pytest.raises(RuntimeError, match="frame 5"):
        demo.run_demo(tmp_path, steps=STEPS, ks=[8], nic=corrupting_nic, cache_dir=cache,
                      max_frames=20, quiet=True)
    assert calls == [(8, "bounded")]


def test_while_building_runs_once_on_the_gradients_before_the_nic_stage(trained, tmp_path):
    order = []

    def nic(frames, k, codec):
        order.append("nic")
        return demo.golden_nic_stage(frames, k, codec)

    grads, _ = demo.run_demo(tmp_path, steps=STEPS, ks=[8], nic=nic, cache_dir=trained,
                             max_frames=2, quiet=True, codecs=("paper",),
                             while_building=lambda g: order.append(g))
    assert order[0] is grads and order[1:] == ["nic"] * 3


def test_max_frames_sends_the_start_of_each_capture(trained, tmp_path):
    cache = trained
    seen = []

    def counting_nic(frames, k, codec):
        seen.append(len(frames))
        return demo.golden_nic_stage(frames, k, codec)

    grads, rows = demo.run_demo(tmp_path, steps=STEPS, ks=[10, 6], nic=counting_nic, cache_dir=cache,
                                max_frames=4, quiet=True)
    assert seen == [4] * 12
    assert [(r.codec, r.k, r.capture, r.frames, r.payload_in) for r in rows] == [
        (codec, k, c, 4, 4 * 1448) for codec in ("bounded", "paper") for k in (10, 6)
        for c in ("early", "mid", "late")]
    wire, _ = demo.F.read_pcap(tmp_path / "wire_paper_k6.pcap")
    assert len(wire) == 12
    # One codec only, and the bounded codec's k range is checked up front.
    _, rows = demo.run_demo(tmp_path, steps=STEPS, ks=[20], nic=counting_nic, cache_dir=cache,
                            max_frames=1, quiet=True, codecs=("paper",))
    assert [r.codec for r in rows] == ["paper"] * 3
    with pytest.raises(ValueError, match="1..16"):
        demo.run_demo(tmp_path, steps=STEPS, ks=[20], cache_dir=cache, max_frames=1, quiet=True)


def test_demo_rejects_bad_arguments(tmp_path, capsys):
    assert cli.main(["demo", "--k", "ten", "--out", str(tmp_path)]) == 2
    assert cli.main(["demo", "--steps", "2", "--out", str(tmp_path)]) == 2
    with pytest.raises(ValueError, match="k"):
        demo.run_demo(tmp_path, steps=STEPS, ks=[0], quiet=True)


@pytest.mark.long
def test_rtl_scope_runs_the_engines_and_checks_them(demo_run, tmp_path):
    _, text, out, cache = demo_run
    rows = json.loads((out / "summary.json").read_text())["rows"]
    on_rtl = [(r["codec"], r["k"], r["capture"]) for r in rows if "rtl" in r["counters"]]
    assert on_rtl == [(codec, 10, c) for codec in ("bounded", "paper") for c in ("early", "mid", "late")]
    for r in rows:
        if "rtl" in r["counters"]:
            tx, rx = r["counters"]["rtl"]["tx"], r["counters"]["rtl"]["rx"]
            assert tx["counters"]["compressed"] == r["frames"] == rx["counters"]["decompressed"]
            # Latency: first beat in to first beat out, so never below one clock.
            assert tx["latency_min"] >= 1 and rx["latency_min"] >= 1
    assert "5. RTL: the Verilated TX and RX engines ran every capture at 2^-10" in text
    with pytest.raises(ValueError, match="rtl"):
        demo.run_demo(tmp_path, steps=STEPS, ks=[10], rtl="some", cache_dir=cache, quiet=True)


@pytest.mark.long
def test_demo_real_tcp_stage_reports_or_says_why_not(demo_run):
    from inceptionn.drivers.netns import netns_available
    _, text, _, _ = demo_run
    if netns_available() is None:
        assert "6. Real Linux TCP" in text and "read exactly the golden roundtrip" in text
        rows = [l.split("|") for l in text.splitlines() if l.startswith("| 1500 ") or l.startswith("| 9000 ")]
        assert len(rows) == 2 and all(r[6].strip() == "0" and r[7].strip() == "0" for r in rows)
        assert "7. The paper's gradient exchange" in text and "INC+C" in text
    else:
        assert "6. Real Linux TCP through the software NIC: skipped" in text
