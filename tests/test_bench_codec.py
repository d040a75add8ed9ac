"""`make bench-codec` on a tiny buffer: every row is there, its numbers are sane, and bad
arguments are one-line errors (status 2)."""

import math
import re

import pytest

from inceptionn import cli

CPU_METHODS = ["memcpy", "fp16 cast", "device pack", "device unpack", "fast pack, 1 core",
               "fast unpack, 1 core", "fast pack, 2 threads", "fast unpack, 2 threads"]


def test_cpu_rows(capsys):
    rc = cli.main(["bench", "codec", "--size", "64K", "--repeat", "1", "--device", "cpu",
                   "--threads", "2", "--codec", "paper", "--k", "8"])
    assert rc == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if l.startswith("cpu ")]
    assert [l[9:33].strip() for l in rows] == CPU_METHODS, out
    for l in rows:
        gbps, x_memcpy = (float(v) for v in l[33:].split()[:2])
        assert math.isfinite(gbps) and gbps > 0 and x_memcpy > 0, l
    assert all(float(l[33:].split()[2]) > 1 for l in rows if "pack" in l)    # ratios
    # the path: torch's copies; the device codec by golden.fast on the CPU; fast called directly
    assert [l.rstrip().rsplit(None, 1)[1] for l in rows] == \
        ["ops", "ops", "golden.fast", "golden.fast"] + ["numba"] * 4, out


@pytest.mark.parametrize("argv,msg", [
    (["--device", "cuda:7"], "no such GPU"), (["--device", "meta"], "only cpu and cuda"),
    (["--size", "3"], "multiple of 4"), (["--k", "17"], "k"), (["--repeat", "0"], "repeat"),
    (["--threads", "0"], "threads"), (["--exchange-chunk", "0"], "exchange-chunk")])
def test_bad_arguments(argv, msg, capsys):
    assert cli.main(["bench", "codec"] + argv) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.long
def test_exchange_rows(capsys):
    """Two ranks over gloo: gloo, fp16 and the ring pipelined and not, each with a time
    and its ratio to gloo's."""
    rc = cli.main(["bench", "codec", "--size", "64K", "--repeat", "1", "--device", "cpu",
                   "--threads", "1", "--exchange", "--exchange-size", "256K",
                   "--exchange-chunk", "4000"])
    assert rc == 0
    out = capsys.readouterr().out
    line = [l for l in out.splitlines() if l.startswith("P = 2 on cpu")]
    assert len(line) == 1, line
    # the pipelined ring against its coding and its wire, each alone
    parts = re.search(r"TorchRing pipelined ([\d.]+) ms against its coding alone ([\d.]+) ms "
                      r"\((\d+) threads\) and its wire alone ([\d.]+) ms: ([\d.]+) x max", out)
    assert parts and all(float(x) > 0 for x in parts.groups()), out
    for name in ("gloo all_reduce", "fp16 hook", "TorchRing pipelined", "TorchRing unpipelined"):
        assert f"; {name} " in line[0] or f": {name} " in line[0], line[0]
    assert "MB per rank per call" in line[0]
