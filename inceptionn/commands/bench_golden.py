"""Golden-model throughput against a plain copy and lossless compressors (`make bench`).

Two buffers: a gradient-like one (float32 drawn from N(0, 1e-3), 64 MiB by default) and
the demo's real HDC gradients (all captures, cut to --size if that is smaller). For each
buffer the table gives, per method, the compression ratio, the best time of a few runs,
the throughput in GB/s (1 GB = 1e9 bytes), and how many times longer than a NumPy copy
of the same buffer, measured in the same run, it takes.

Every golden and fast method runs for both wire format versions in the same run: v1
(the paper's codec) and v2 (the bounded codec; the same bytes on the wire, other field
values); the summary lines put v2's GB/s next to v1's and to snappy's and lz4's.

Methods: numpy copy (the baseline); golden encode = compression_block over the buffer
(tags, stored bits, decoded values); golden pack = pack_groups (the compressed groups as
bytes); golden unpack = unpack_groups of those groups; fast pack = golden.fast_pack_groups
over the whole buffer (the compiled path, the same bytes); fast unpack groups =
golden.fast_unpack_groups of those groups; fast pack into / fast unpack into = the same
kernels writing buffers made once (golden.fast.fast_pack_groups_into /
fast_unpack_groups_into), as the copy writes its own, so that the last summary line
compares the codec with the copy on one core (the issue's target: half a copy or better);
that comparison is then repeated in --rounds rounds (copy, pack into, unpack into and
unpack with the ring's index in turn, each the best of --repeat runs) and printed as
medians with the range of the per-round shares, steadier than one best-of when other
jobs share the machine, on both buffers and on the 12.2M-parameter MLP's DDP bucket
(gradients after 3 steps, cached beside the HDC ones; --no-mlp skips it). "unpack"
decodes the stream alone, as the NIC's wire carries it; "unpack with the ring's index"
also reads the offset of every 64th group, as the device codec's ring frames it;
fast encode+pack =
golden.fast_compress_payload per 65532-byte payload (the largest whole number of floats
the 16-bit shim allows, about 64 KiB), with shim and tail, as a NIC compresses; fast NIC =
the same per 8948-byte payload (a jumbo segment each); fast unpack =
golden.fast_decompress_payload of the fast encode+pack payloads; python-snappy and lz4
(frame format, default level) compress and decompress. GB/s is always over the
uncompressed bytes (what goes in to compress, what comes out of decompress), and ratio
is the uncompressed over the compressed size for both directions.
"""

from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inceptionn import golden
from inceptionn.golden import fast, fast_index
from .args import CliError
from .checks import int_in, size_in_memory

__all__ = ["DEFAULT_SIZE", "Result", "parse_size", "bench_buffer", "run_bench", "format_table",
           "format_vs_copy", "copy_rounds", "format_rounds", "add_arguments", "run"]

DEFAULT_SIZE = 64 << 20
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_size(text) -> int:
    """'64M', '64MiB', '256K', '4096' -> bytes (binary units); a positive multiple of 4."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"size must look like 4096, 256K or 64M, got {text!r}")
    size = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if size < 4 or size % 4:
        raise ValueError(f"size must be a positive multiple of 4 bytes (whole float32s), got {size}")
    return size


@dataclass
class Result:
    buffer: str
    method: str
    in_bytes: int
    out_bytes: int
    seconds: float  # best wall time of the runs
    cpu_seconds: float  # best CPU time (user + system) of the runs: steadier on a busy machine
    runs: int
    vs_copy: float = math.nan  # seconds / the copy's seconds

    @property
    def ratio(self) -> float:
        return self.in_bytes / self.out_bytes

    @property
    def gbps(self) -> float:
        return self.in_bytes / self.seconds / 1e9


def _best_time(fn, repeat, budget):
    """Best wall time of up to `repeat` runs, stopping early once `budget` seconds are spent.

    At least two runs when repeat >= 2: the first one also pays for page-faulting fresh
    output buffers, which on a 64 MiB input can double its time.
    """
    best, best_cpu, runs, spent, out = math.inf, math.inf, 0, 0.0, None
    while runs < repeat and (runs < min(2, repeat) or spent < budget):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        dt, dc = time.perf_counter() - t, time.process_time() - c
        best, best_cpu = min(best, dt), min(best_cpu, dc)
        runs, spent = runs + 1, spent + dt
    return best, best_cpu, runs, out


PAYLOAD = 65532      # the largest multiple of 4 that fits the shim's 16-bit length
JUMBO_PAYLOAD = 8948  # TCP payload of a 9000-byte MTU jumbo frame


def _payloads(raw, size):
    return [raw[i:i + size] for i in range(0, len(raw), size)]


def _per_payload(raw, k, compress, size=PAYLOAD):
    """Compress as a NIC does: one payload (shim + groups + tail) per segment of `size` bytes."""
    return sum(len(compress(raw[i:i + size], k)) for i in range(0, len(raw), size))


CODEC_TAGS = {"paper": "v1", "bounded": "v2"}


def _codec_methods(bits, raw, k, codec):
    """The golden and fast methods of one codec, after checking the fast path's bytes
    against the model's (what the decoders get is made once here)."""
    tag = CODEC_TAGS[codec]
    packed = golden.pack_groups(bits, k, codec)
    if golden.fast_pack_groups(bits, k, codec) != packed:
        raise RuntimeError(f"fast pack {tag} produced bytes other than the model's")
    comps = [golden.fast_compress_payload(p, k, codec) for p in _payloads(raw, PAYLOAD)]
    decoded = golden.compression_block(bits, k, codec)[3].astype("<u4").tobytes()
    if b"".join(golden.fast_decompress_payload(c)[0] for c in comps) != decoded:
        raise RuntimeError(f"fast unpack {tag} restored bytes other than the model's")
    comp_bytes = sum(map(len, comps))

    def enc():
        t, stored, width, dec = golden.compression_block(bits, k, codec)
        # What the encoder emits: tags (2 bits each) plus the stored bytes.
        return (2 * t.size + 7) // 8 + int(width.sum(dtype=np.int64))

    def fast_unpack():
        for c in comps:
            golden.fast_decompress_payload(c)
        return comp_bytes

    def compress(payload, kk):
        return golden.fast_compress_payload(payload, kk, codec)

    # The "into" kernels write a buffer made once, as the copy does: no page faults.
    room = np.empty(fast.pack_room(bits.size), np.uint8)
    words = np.empty(fast.unpack_room(bits.size), np.uint32)
    packed_arr = np.frombuffer(packed, np.uint8)

    return [
        (f"golden encode {tag} k={k}", enc),
        (f"golden pack {tag} k={k}", lambda: len(golden.pack_groups(bits, k, codec))),
        (f"golden unpack {tag} k={k}",
         lambda: (golden.unpack_groups(packed, bits.size, k, codec), len(packed))[1]),
        (f"fast pack {tag} k={k}", lambda: len(golden.fast_pack_groups(bits, k, codec))),
        (f"fast unpack groups {tag} k={k}",
         lambda: (golden.fast_unpack_groups(packed, bits.size, k, codec), len(packed))[1]),
        (f"fast pack into {tag} k={k}", lambda: fast.fast_pack_groups_into(bits, room, k, codec)),
        (f"fast unpack into {tag} k={k}",
         lambda: (fast.fast_unpack_groups_into(packed_arr, bits.size, words, k, codec),
                  len(packed))[1]),
        (f"fast encode+pack {tag} k={k}", lambda: _per_payload(raw, k, compress)),
        (f"fast NIC {tag} k={k}", lambda: _per_payload(raw, k, compress, JUMBO_PAYLOAD)),
        (f"fast unpack {tag} k={k}", fast_unpack),
    ]


def bench_buffer(name, values: np.ndarray, *, k=golden.K_DEFAULT, repeat=3, budget=5.0, progress=None,
                 codecs=("paper", "bounded")):
    """Time every method on one float32 buffer; returns [Result], the copy first."""
    import lz4.frame
    import snappy

    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    raw = values.tobytes()
    n = len(raw)
    dst = np.empty_like(values)
    for codec in codecs:
        golden.check_k(k, codec)
    snap, lz = snappy.compress(raw), lz4.frame.compress(raw)
    methods = [("numpy copy", lambda: (np.copyto(dst, values), n)[1])]
    for codec in codecs:
        methods += _codec_methods(bits, raw, k, codec)
    methods += [
        ("snappy", lambda: len(snappy.compress(raw))),
        ("snappy decompress", lambda: (snappy.decompress(snap), len(snap))[1]),
        ("lz4", lambda: len(lz4.frame.compress(raw))),
        ("lz4 decompress", lambda: (lz4.frame.decompress(lz), len(lz))[1]),
    ]
    results = []
    for method, fn in methods:
        if progress:
            progress(f"{name}: {method}")
        sec, cpu, runs, out_bytes = _best_time(fn, repeat, budget)
        results.append(Result(name, method, n, int(out_bytes), sec, cpu, runs))
    base = results[0].seconds
    for r in results:
        r.vs_copy = r.seconds / base
    if not np.array_equal(dst.view(np.uint32), bits):
        raise RuntimeError("numpy copy produced a different buffer")
    return results


RING_EVERY = 64    # groups per index entry, as the device codec's ring frames them


def copy_rounds(name, values: np.ndarray, *, k=golden.K_DEFAULT, rounds=5, repeat=7,
                codecs=("paper", "bounded")):
    """One core, the copy against pack and unpack into buffers made once, in `rounds`
    rounds of (copy, pack, unpack, unpack with the ring's index) in turn, each the best
    of `repeat` runs: returns {"buffer", "bytes", codec: {"copy", "pack", "unpack",
    "unpack_idx": [seconds per round]}}. "unpack" reads the stream alone (the NIC's
    wire: no index); "unpack_idx" also the byte offset of every RING_EVERY-th group,
    which the ring carries (golden.fast_index). Both decoders' values are checked
    against golden's once before timing."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    dst = np.empty_like(bits)
    out = {"buffer": name, "bytes": values.nbytes}
    for codec in codecs:
        room = np.empty(fast.pack_room(bits.size), np.uint8)
        words = np.empty(fast.unpack_room(bits.size), np.uint32)
        index = np.empty(-(-(-(-bits.size // 8)) // RING_EVERY), np.int64)
        packed = room[:fast.fast_pack_groups_into(bits, room, k, codec, index, RING_EVERY)].copy()
        want = golden.compression_block(bits, k, codec)[3].astype("<u4").tobytes()
        fast.fast_unpack_groups_into(packed, bits.size, words, k, codec)
        if words[:bits.size].tobytes() != want:
            raise RuntimeError(f"fast unpack {CODEC_TAGS[codec]} restored values other than the model's")
        words[:] = 0
        fast_index.fast_unpack_groups_indexed_into(packed, bits.size, words, index, RING_EVERY, k, codec)
        if words[:bits.size].tobytes() != want:
            raise RuntimeError(f"indexed unpack {CODEC_TAGS[codec]} restored values other than the model's")
        times: dict[str, list[float]] = {"copy": [], "pack": [], "unpack": [], "unpack_idx": []}
        for _ in range(rounds):
            for what, fn in (("copy", lambda: np.copyto(dst, bits)),
                             ("pack", lambda: fast.fast_pack_groups_into(bits, room, k, codec)),
                             ("unpack", lambda: fast.fast_unpack_groups_into(packed, bits.size, words,
                                                                              k, codec)),
                             ("unpack_idx", lambda: fast_index.fast_unpack_groups_indexed_into(
                                 packed, bits.size, words, index, RING_EVERY, k, codec))):
                times[what].append(_best_time(fn, repeat, math.inf)[0])
        out[codec] = times
    return out


_ROUND_LABELS = {"pack": "pack", "unpack": "unpack", "unpack_idx": "unpack with the ring's index"}


def format_rounds(res) -> str:
    """copy_rounds' result as one line: medians of the rounds, and per method the median
    and range of the per-round shares of the copy (copy time / method time)."""
    copy_all = [t for c in CODEC_TAGS if c in res for t in res[c]["copy"]]
    parts = [f"copy {res['bytes'] / float(np.median(copy_all)) / 1e9:.3g} GB/s"]
    for codec, tag in CODEC_TAGS.items():
        if codec not in res:
            continue
        t = res[codec]
        for what, label in _ROUND_LABELS.items():
            shares = [c / m for c, m in zip(t["copy"], t[what])]
            parts.append(f"{label} {tag} {res['bytes'] / float(np.median(t[what])) / 1e9:.3g} GB/s = "
                         f"{float(np.median(shares)):.0%} ({min(shares):.0%}-{max(shares):.0%})")
    n = len(next(res[c] for c in CODEC_TAGS if c in res)["copy"])
    return f"one core vs numpy copy, medians of {n} rounds, {res['buffer']}: " + "; ".join(parts)


def mlp_bucket(steps: int = 3, seed: int = 0, cache_dir=None) -> np.ndarray:
    """The gradient DDP hands over as one bucket for the 12.2M-parameter MLP of `bench
    train` (64-3000-3000-1000-10, all its parameters' gradients, float32, 48.8 MB) after
    `steps` SGD steps on digits (batch 64, lr 0.05), cached in cache_dir as a .npy."""
    path = Path(cache_dir) / f"mlp_bucket_steps{steps}_seed{seed}.npy" if cache_dir is not None else None
    if path is not None and path.exists():
        return np.load(path)
    import torch

    from inceptionn import gradients
    from .bench_train import _model

    net = _model("mlp")
    data = gradients.load_digits_split(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for _ in range(steps):
        pick = rng.integers(0, len(data.y_train), 64)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(torch.from_numpy(data.x_train[pick])),
                                                 torch.from_numpy(data.y_train[pick]))
        loss.backward()
        opt.step()
    grad = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy().astype(np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, grad)
        tmp.replace(path)
    return grad


def run_bench(size=DEFAULT_SIZE, *, k=golden.K_DEFAULT, seed=0, real=True, real_steps=None,
              cache_dir=None, repeat=3, budget=5.0, progress=None, rounds=0, mlp=True):
    """Benchmark the synthetic buffer and (if `real`) the demo's gradients; with rounds,
    also copy_rounds on each and (if `real` and `mlp`) on the MLP's DDP bucket
    (mlp_bucket; returned as the Result list's `rounds` attribute)."""
    from inceptionn import gradients

    size = parse_size(size)
    rng = np.random.default_rng(seed)
    synth = rng.normal(0.0, 1e-3, size // 4).astype(np.float32)
    results = _Results(bench_buffer(f"N(0,1e-3) {_human(size)}", synth, k=k, repeat=repeat,
                                    budget=budget, progress=progress))
    if rounds:
        if progress:
            progress(f"N(0,1e-3) {_human(size)}: {rounds} rounds of copy, pack, unpack")
        results.rounds.append(copy_rounds(f"N(0,1e-3) {_human(size)}", synth, k=k, rounds=rounds,
                                          repeat=repeat))
    del synth
    if real:
        if progress:
            progress("loading the demo's real gradients (training if not cached)")
        grads = gradients.real_gradients(real_steps or gradients.DEFAULT_STEPS, seed,
                                    cache_dir=cache_dir if cache_dir is not None else gradients.DEFAULT_CACHE)
        g = grads.all()[: size // 4]
        results += bench_buffer(f"HDC grads {_human(g.nbytes)}", g, k=k, repeat=repeat,
                                budget=budget, progress=progress)
        if rounds:
            if progress:
                progress(f"HDC grads {_human(g.nbytes)}: {rounds} rounds of copy, pack, unpack")
            results.rounds.append(copy_rounds(f"HDC grads {_human(g.nbytes)}", g, k=k,
                                              rounds=rounds, repeat=repeat))
        if rounds and mlp:
            if progress:
                progress("the 12.2M-parameter MLP's DDP bucket (training 3 steps if not cached)")
            b = mlp_bucket(cache_dir=cache_dir if cache_dir is not None else gradients.DEFAULT_CACHE)
            if progress:
                progress(f"MLP bucket {_human(b.nbytes)}: {rounds} rounds of copy, pack, unpack")
            results.rounds.append(copy_rounds(f"MLP bucket {_human(b.nbytes)}", b, k=k, rounds=rounds,
                                              repeat=repeat))
    return results


class _Results(list):
    """run_bench's Result list, with the copy_rounds results beside it."""

    def __init__(self, items=()):
        super().__init__(items)
        self.rounds: list = []


def _human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.4g} {unit}"
    return f"{n} B"


def format_table(results) -> str:
    head = (f"{'buffer':<20} {'method':<28} {'ratio':>6} {'wall ms':>9} {'cpu ms':>9} {'GB/s':>7} "
            f"{'x copy':>7} {'runs':>4}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.buffer:<20} {r.method:<28} {r.ratio:6.2f} {r.seconds * 1e3:9.4g} "
                     f"{r.cpu_seconds * 1e3:9.4g} {r.gbps:7.4g} {r.vs_copy:7.1f} {r.runs:4d}")
    return "\n".join(lines)


def format_versions(results) -> str:
    """Per buffer, the fast path's v2 pack/unpack GB/s next to v1's and snappy's/lz4's,
    all from the same run."""
    lines = []
    for buf in dict.fromkeys(r.buffer for r in results):
        by = {re.sub(r" k=\d+$", "", r.method): r for r in results if r.buffer == buf}
        if "fast pack v2" not in by or "fast pack v1" not in by:
            continue
        parts = []
        for what, v in (("pack", "fast pack"), ("unpack", "fast unpack groups")):
            a, b = by[v + " v1"], by[v + " v2"]
            ca, cb = a.in_bytes / a.cpu_seconds / 1e9, b.in_bytes / b.cpu_seconds / 1e9
            parts.append(f"{what} v2 {b.gbps:.3g} GB/s, v1 {a.gbps:.3g} (v2/v1 {b.gbps / a.gbps:.2f}; "
                         f"per CPU second v2 {cb:.3g}, v1 {ca:.3g})")
        parts.append(f"snappy {by['snappy'].gbps:.3g} / {by['snappy decompress'].gbps:.3g}, "
                     f"lz4 {by['lz4'].gbps:.3g} / {by['lz4 decompress'].gbps:.3g} GB/s "
                     f"(compress / decompress)")
        lines.append(f"v2 vs v1, {buf}: " + "; ".join(parts))
    return "\n".join(lines)


def format_vs_copy(results) -> str:
    """Per buffer, the one-core pack and unpack (into buffers made once, as the copy's)
    as a share of the numpy copy of the same buffer in the same run: by wall time and by
    CPU time (steadier when other processes share the core)."""
    lines = []
    for buf in dict.fromkeys(r.buffer for r in results):
        by = {re.sub(r" k=\d+$", "", r.method): r for r in results if r.buffer == buf}
        copy = by.get("numpy copy")
        if copy is None:
            continue
        parts = []
        for tag in CODEC_TAGS.values():
            for what in ("pack", "unpack"):
                r = by.get(f"fast {what} into {tag}")
                if r is not None:
                    parts.append(f"{what} {tag} {r.gbps:.3g} GB/s = {copy.seconds / r.seconds:.0%} "
                                 f"(CPU time {copy.cpu_seconds / r.cpu_seconds:.0%})")
        lines.append(f"one core vs numpy copy ({copy.gbps:.3g} GB/s), {buf}: " + "; ".join(parts))
    return "\n".join(lines)


def add_arguments(ap) -> None:
    """`inceptionn bench golden`'s options."""
    ap.add_argument("--size", type=size_in_memory(parse_size, 4), default="64M", help="synthetic buffer size, e.g. 64M, 256K (default %(default)s)")
    ap.add_argument("--k", type=int, default=golden.K_DEFAULT,
                    help="error bound 2^-k, 1..16 (both codecs run; default %(default)s)")
    ap.add_argument("--repeat", type=int_in(1), default=3, help="runs per method, best kept (default %(default)s)")
    ap.add_argument("--rounds", type=int_in(0), default=5,
                    help="rounds of copy, pack, unpack in turn for the one-core comparison, "
                         "medians printed (0: none; default %(default)s)")
    ap.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0)
    ap.add_argument("--no-real", action="store_true", help="skip the demo's real gradients")
    ap.add_argument("--no-mlp", action="store_true",
                    help="skip the rounds on the 12.2M-parameter MLP's DDP bucket (48.8 MB)")
    ap.add_argument("--real-steps", type=int, default=None,
                    help="training steps for the real gradients (default: the demo's)")
    ap.add_argument("--cache", type=Path, default=None, help="gradient cache directory (default: the demo's)")


def run(args) -> int:
    if args.repeat < 1:
        raise CliError("--repeat must be >= 1")
    try:
        size = args.size
        golden.check_k(args.k, "bounded")
    except ValueError as e:
        raise CliError(str(e))

    def progress(msg):
        print(f"  ... {msg}", file=sys.stderr, flush=True)

    results = run_bench(size, k=args.k, seed=args.seed, real=not args.no_real, real_steps=args.real_steps,
                        cache_dir=args.cache, repeat=args.repeat, progress=progress,
                        rounds=args.rounds, mlp=not args.no_mlp)
    print("ratio = uncompressed bytes / compressed bytes; GB/s = uncompressed bytes per wall second "
          "(in to compress, out of decompress); x copy = wall time / numpy copy wall time on the "
          "same buffer; best of `runs`")
    print(format_table(results))
    print(format_versions(results))
    print(format_vs_copy(results))
    for r in getattr(results, "rounds", []):
        print(format_rounds(r))
    return 0
