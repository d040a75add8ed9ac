"""`make bench` on a tiny buffer: the table is there and its numbers are sane."""

import math
import re

import numpy as np
import pytest

from inceptionn import cli
from inceptionn import golden, gradients
from inceptionn.bench import golden as bench

PER_CODEC = ["golden encode", "golden pack", "golden unpack", "fast pack", "fast unpack groups",
             "fast pack into", "fast unpack into", "fast encode+pack", "fast NIC", "fast unpack"]
METHODS = (["numpy copy"] + [f"{m} {v} k=10" for v in ("v1", "v2") for m in PER_CODEC]
           + ["snappy", "snappy decompress", "lz4", "lz4 decompress"])


def _portable_rows():
    """Rows of the portable kernels in each round line (where the host runs a faster one)."""
    from inceptionn.golden import fast_kernels
    return 0 if fast_kernels.KERNEL == "portable" else 2


_PORTABLE_ROWS = _portable_rows()


def test_bench_prints_a_sane_table(tmp_path, capsys):
    rc = cli.main(["bench", "golden", "--size", "64K", "--repeat", "2", "--rounds", "3", "--real-steps", "10",
                   "--cache", str(tmp_path), "--no-mlp"])
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
    assert (tmp_path / f"hdc_grads_v{gradients.CACHE_VERSION}_steps10_seed0.npz").exists()
    # v2 next to v1 and snappy / lz4, per buffer, from the same run
    summary = [l for l in out.splitlines() if l.startswith("v2 vs v1, ")]
    assert len(summary) == 2 and all("snappy" in l and "lz4" in l and "v2/v1" in l for l in summary)
    # pack and unpack on one core as a share of the copy, per buffer
    vs_copy = [l for l in out.splitlines() if l.startswith("one core vs numpy copy (")]
    assert len(vs_copy) == 2 and all(l.count("% (CPU time") == 4 for l in vs_copy), vs_copy
    # the same, as medians of interleaved rounds with the range of the shares: the
    # synthetic buffer, then the HDC gradients at the absolute bound and scaled as the hook
    rounds = [l for l in out.splitlines() if l.startswith("one core vs numpy copy, medians of 3 rounds")]
    assert len(rounds) == 3, rounds
    synth, absolute, scaled = rounds
    assert ", absolute 2^-10 (zero groups: v1 " in absolute and ", v2 " in absolute
    assert ", scaled as the default hook (zero groups: v2 " in scaled and " v1 " not in scaled
    shares = [len(re.findall(r"\d+% \(\d+%-\d+%\)", l)) for l in rounds]
    n = _PORTABLE_ROWS                          # v2 through the portable kernels, same rounds
    assert shares == [6 + n, 6 + n, 4 + n], rounds   # the scaled row: v2 only, and the scaling
    assert all(l.count("portable kernel") == n for l in rounds)
    from inceptionn.golden import fast_kernels
    assert f"codec kernel: {fast_kernels.KERNEL} (" in out
    assert all(l.count("unpack with the ring's index") == 2 for l in (synth, absolute))
    assert "choosing and applying the scales" in scaled


def test_copy_rounds_times_every_round_and_checks_the_values():
    bits = np.random.default_rng(3).normal(0, 1e-3, 5000).astype(np.float32)
    res = bench.copy_rounds("x", bits, k=10, rounds=4, repeat=2)
    for codec in ("paper", "bounded"):
        assert all(len(res[codec][m]) == 4 and min(res[codec][m]) > 0
                   for m in ("copy", "pack", "unpack", "unpack_idx"))
    assert set(res["zero_groups"]) == {"paper", "bounded"}
    line = bench.format_rounds(res)
    assert line.startswith("one core vs numpy copy, medians of 4 rounds, x (zero groups: v1 ")
    assert res["ratio"]["bounded"] == pytest.approx(
        bits.nbytes / len(golden.pack_groups(bits.view(np.uint32), 10, "bounded")))
    assert f"ratio: v1 {res['ratio']['paper']:.2f}, v2 {res['ratio']['bounded']:.2f})" in line
    assert line.count(" GB/s") == 7 + _PORTABLE_ROWS
    # an extra step (the hook's scaling) timed in the same rounds, for the first codec only
    res = bench.copy_rounds("y", bits, k=10, rounds=3, repeat=1, codecs=("bounded",),
                            extra={"scaling": lambda: bench.scale_chunks(bits, 10)})
    assert "paper" not in res and len(res["bounded"]["scaling"]) == 3
    assert " scaling " in bench.format_rounds(res) and bench.format_rounds(res).count(" GB/s") == 5 + _PORTABLE_ROWS


def test_format_targets_reads_each_buffers_medians_against_half_a_copy():
    """One line per buffer: v2's pack and unpack, the median share of the copy, MISSED
    where under half; a buffer timed without v2 is left out."""
    def res(name, copy, pack, unpack):
        return {"buffer": name, "bytes": 1, "bounded": {"copy": copy, "pack": pack, "unpack": unpack}}
    out = bench.format_targets([res("a", [1.0] * 3, [1.5, 1.6, 3.0], [2.2, 2.1, 1.0]),
                                {"buffer": "v1 only", "bytes": 1, "paper": {}}], "avx2")
    lines = out.splitlines()
    assert lines[0].startswith("Targets: codec >= 0.5 of a same-core copy") and "kernel avx2" in lines[0]
    assert lines[1] == "  a: pack 0.62 (0.33-0.67); unpack 0.48 (0.45-1.00): MISSED"
    assert len(lines) == 2


def test_mlp_bucket_is_the_models_gradient_and_cached(tmp_path):
    """The MLP's bucket, on a small MLP of the same build: one gradient per parameter,
    finite, not all zero, the same from the cache as freshly trained; and the default
    build is bench train's 12.2M-parameter model, parameter for parameter."""
    sizes = (64, 40, 20, 10)
    b = bench.mlp_bucket(steps=1, cache_dir=tmp_path, sizes=sizes)
    assert b.dtype == np.float32 and b.size == 64 * 40 + 40 + 40 * 20 + 20 + 20 * 10 + 10
    assert np.isfinite(b).all() and np.count_nonzero(b) > b.size // 10
    assert (tmp_path / "mlp_bucket_64-40-20-10_steps1_seed0.npy").exists()
    assert np.array_equal(bench.mlp_bucket(steps=1, cache_dir=tmp_path, sizes=sizes), b)
    assert not np.array_equal(bench.mlp_bucket(steps=2, sizes=sizes), b)    # it trains
    with pytest.raises(ValueError, match="64 pixels"):
        bench.mlp_bucket(sizes=(32, 10))
    import torch

    from inceptionn.bench.train_rank import build_model
    ours, theirs = list(bench.mlp_net().parameters()), list(build_model("mlp").parameters())
    assert len(ours) == len(theirs) == 8
    assert sum(p.numel() for p in ours) == 64 * 3000 + 3000 + 3000 * 3000 + 3000 + 3000 * 1000 + 1000 + 10010
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


def test_scale_chunks_are_what_the_hook_codes():
    """scale_chunks gives each chunk ScaledCodec's s and the values it codes: packed in
    one go, the chunks' frames back to back less their scale bytes."""
    from inceptionn.drivers.collectives.codecs import SCALE_MIN, ScaledCodec, choose_scale
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.normal(0, 1e-6, 3000), rng.normal(0, 1e-2, 3000),
                        rng.normal(0, 1.0, 2005)]).astype(np.float32)
    scaled, s = bench.scale_chunks(v, 10, chunk=1000)
    assert list(s) == [choose_scale(v[i:i + 1000], 10) for i in range(0, v.size, 1000)]
    assert len(set(s.tolist())) >= 3                    # three magnitudes, three scales
    codec = ScaledCodec(10)
    frames = [codec.encode(v[i:i + 1000]) for i in range(0, v.size, 1000)]
    assert [f[0] + SCALE_MIN for f in frames] == list(s)
    assert golden.fast_pack_groups(scaled.view(np.uint32), 10, "bounded") == b"".join(f[1:] for f in frames)
    # Scaled, far fewer groups code to zero than at the absolute bound.
    zero = bench.zero_group_share
    absolute = zero(golden.compression_block(v.view(np.uint32), 10, "bounded")[0])
    assert zero(golden.compression_block(scaled.view(np.uint32), 10, "bounded")[0]) < absolute / 2


def test_zero_group_share_counts_whole_groups():
    tags = np.zeros(20, np.uint8)            # 3 groups, the last one of 4 values
    assert bench.zero_group_share(tags) == 1.0
    tags[9] = 1
    assert bench.zero_group_share(tags) == pytest.approx(2 / 3)
    tags[17] = 3
    assert bench.zero_group_share(tags) == pytest.approx(1 / 3)


def test_run_bench_numbers_match_the_codec(tmp_path):
    res = bench.run_bench("16K", real=False, repeat=1)
    assert [r.method for r in res] == METHODS
    assert all(r.buffer == "N(0,1e-3) 16 KiB" and r.in_bytes == 16384 for r in res)
    copy, snap, snap_d, lz, lz_d = res[0], *res[-4:]
    assert copy.ratio == 1.0 and copy.vs_copy == 1.0
    values = np.random.default_rng(0).normal(0.0, 1e-3, 4096).astype(np.float32)
    raw = values.tobytes()
    for i, codec in enumerate(("paper", "bounded")):
        (enc, pack, unpack, fast_pack, fast_unpack_groups, pack_into, unpack_into,
         fast_payloads, fast_nic, fast_unpack) = res[1 + 10 * i:11 + 10 * i]
        assert pack.out_bytes == len(golden.pack_groups(values.view(np.uint32), 10, codec))
        # Packed groups are the encoder's tags and stored bytes, nothing more.
        assert (enc.out_bytes == pack.out_bytes == unpack.out_bytes == fast_pack.out_bytes
                == fast_unpack_groups.out_bytes == pack_into.out_bytes == unpack_into.out_bytes)
        # One shim per payload: 16384 bytes are one 65532-byte payload, or two of 8948 bytes.
        assert fast_payloads.out_bytes == fast_unpack.out_bytes == len(
            golden.compress_payload(raw, 10, codec))
        assert fast_nic.out_bytes == sum(len(golden.compress_payload(raw[j:j + 8948], 10, codec))
                                         for j in (0, 8948))
        assert pack.ratio > 3  # N(0, 1e-3) mostly falls in the 0- and 8-bit bands at 2^-10
    # the two versions cost the same bytes
    assert [r.out_bytes for r in res[1:11]] == [r.out_bytes for r in res[11:21]]
    assert snap.out_bytes == snap_d.out_bytes and lz.out_bytes == lz_d.out_bytes
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
    assert cli.main(["bench", "golden", "--size", "3"]) == 2
    assert cli.main(["bench", "golden", "--k", "0", "--no-real"]) == 2
    assert cli.main(["bench", "golden", "--k", "17", "--no-real"]) == 2      # the bounded codec stops at 2^-16
    assert "size" in capsys.readouterr().err
    # 0 used to mean "the default" silently; under 3 there is no early, mid and late.
    for steps in ("0", "2", "-3"):
        assert cli.main(["bench", "golden", "--real-steps", steps]) == 2
        assert "argument --real-steps" in capsys.readouterr().err


@pytest.mark.long
def test_foreign_dscp_measurement_counts_what_the_rules_accept():
    """inceptionn bench foreign on a few frames through the compiled RX: the counts are
    consistent, golden.rx_frame agrees frame for frame, and the exact expected rates are
    those of the rules."""
    from inceptionn.bench import foreign as bench_foreign
    res = bench_foreign.measure(4000, seed=3)
    assert set(res) == set(bench_foreign.RECEIVERS) | {bench_foreign.FORCED}
    for name, (hits, bad, refused, n) in res.items():
        assert 0 <= bad <= hits <= n and (n == 4000 or name == bench_foreign.FORCED)
    one, two, three, every = (res[name][0] for name in bench_foreign.RECEIVERS)
    assert every == one + two + three and one > 0 and three == 0
    # The forced row: every frame of 12 payload bytes or more reaches the check word,
    # and is refused by it.
    hits, bad, refused, n = res[bench_foreign.FORCED]
    assert n > 3900 and hits == 0 and refused == n
    assert bench_foreign.golden_agrees(100, seed=3) == 100
    exp = bench_foreign.expected_rates()
    assert 4e-4 < exp["version 1 only"] < 6e-4                  # the 5-6e-4
    assert exp["version 2 only"] < exp["version 1 only"] / 15
    assert exp["version 3 only (default)"] < 1e-9 * 1e-4        # the target: at most 1e-9
    # A shim-looking foreign payload is taken when 100 bytes can restore its L, not otherwise.
    for length, taken in ((1024, 1), (0x4000, 0)):
        f = bench_foreign.foreign_frame(length.to_bytes(2, "big") + b"\xc6\x0a" + bytes(100), "udp")
        c = golden.Counters()
        golden.rx_frame(f, counters=c, versions=(2,))
        assert c.version2 == taken


def test_bench_foreign_cli_runs_and_rejects_bad_options(capsys):
    from inceptionn import cli
    assert cli.main(["bench", "foreign", "--frames", "2000", "--golden-check", "50"]) == 0
    out = capsys.readouterr().out
    assert "version 3 only (default)" in out and "v3 check word alone" in out
    for bad in (["--frames", "0"], ["--threads", "0"], ["--golden-check", "-1"]):
        assert cli.main(["bench", "foreign"] + bad) == 2
