"""`make bench` on a tiny buffer: the table is there and its numbers are sane."""

import math

import numpy as np
import pytest

from inceptionn import bench, golden

METHODS = ["numpy copy", "golden encode k=10", "golden pack k=10", "golden unpack k=10",
           "fast pack k=10", "fast encode+pack k=10", "fast NIC k=10", "fast unpack k=10", "snappy",
           "snappy decompress", "lz4", "lz4 decompress"]


def test_bench_prints_a_sane_table(tmp_path, capsys):
    rc = bench.main(["--size", "64K", "--repeat", "2", "--real-steps", "10", "--cache", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if l.startswith(("N(0,1e-3)", "HDC grads"))]
    assert len(rows) == 2 * len(METHODS), out
    assert sum("N(0,1e-3) 64 KiB" in l for l in rows) == len(METHODS)
    assert sum(l.startswith("HDC grads 64 KiB") for l in rows) == len(METHODS)
    for l in rows:
        nums = [float(x) for x in l.split()[-6:]]  # ratio, wall ms, cpu ms, GB/s, x copy, runs
        assert all(math.isfinite(x) and x > 0 for x in nums), l
        assert nums[5] >= 1
    assert (tmp_path / "hdc_grads_v1_steps10_seed0.npz").exists()


def test_run_bench_numbers_match_the_codec(tmp_path):
    res = bench.run_bench("16K", real=False, repeat=1)
    assert [r.method for r in res] == METHODS
    assert all(r.buffer == "N(0,1e-3) 16 KiB" and r.in_bytes == 16384 for r in res)
    (copy, enc, pack, unpack, fast_pack, fast_payloads, fast_nic, fast_unpack, snap, snap_d, lz,
     lz_d) = res
    assert copy.ratio == 1.0 and copy.vs_copy == 1.0
    values = np.random.default_rng(0).normal(0.0, 1e-3, 4096).astype(np.float32)
    raw = values.tobytes()
    assert pack.out_bytes == len(golden.pack_groups(values.view(np.uint32), 10))
    # Packed groups are the encoder's tags and stored bytes, nothing more.
    assert enc.out_bytes == pack.out_bytes == unpack.out_bytes == fast_pack.out_bytes
    # One shim per payload: 16384 bytes are one 65532-byte payload, or two of 8948 bytes.
    assert fast_payloads.out_bytes == fast_unpack.out_bytes == len(golden.compress_payload(raw, 10))
    assert fast_nic.out_bytes == sum(len(golden.compress_payload(raw[i:i + 8948], 10))
                                     for i in (0, 8948))
    assert snap.out_bytes == snap_d.out_bytes and lz.out_bytes == lz_d.out_bytes
    assert pack.ratio > 3  # N(0, 1e-3) mostly falls in the 0- and 8-bit bands at 2^-10
    for r in res:
        assert r.seconds > 0 and r.cpu_seconds >= 0 and r.gbps > 0 and r.vs_copy > 0


def test_parse_size():
    assert bench.parse_size("64M") == 64 << 20
    assert bench.parse_size("256KiB") == 256 << 10
    assert bench.parse_size("4096") == 4096
    for bad in ("0", "6", "1X", "-4", "", "1.5M"):
        with pytest.raises(ValueError, match="size"):
            bench.parse_size(bad)


def test_bench_rejects_bad_options(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--size", "3"])
    with pytest.raises(SystemExit):
        bench.main(["--k", "0", "--no-real"])
    assert "size" in capsys.readouterr().err
