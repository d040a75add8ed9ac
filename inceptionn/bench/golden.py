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
(gradients after 3 steps, cached beside the HDC ones; --no-mlp skips it). The real
gradients and the bucket are timed twice: at the absolute bound 2^-k (both codecs), and
as the DDP hook's default codes them (the bounded codec on each 2^16-float chunk times
2^-s, s chosen by ScaledCodec; the scaling is done before the rounds, outside pack's
and unpack's times, and timed as its own row). Each line's header gives the share of
groups that code to zero (a tag word, no field) and the compression ratio. "unpack"
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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from inceptionn import golden
from inceptionn.golden import fast, fast_index, fast_kernels

__all__ = ["DEFAULT_SIZE", "Result", "parse_size", "bench_buffer", "run_bench", "format_table",
           "format_vs_copy", "copy_rounds", "format_rounds", "format_targets", "zero_group_share", "scale_chunks",
           "both_bounds_rounds", "mlp_net", "mlp_bucket", "MLP_SIZES"]


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


def zero_group_share(tags: np.ndarray) -> float:
    """The share of 8-value groups whose values all fall in the 0-bit band (tag 0): a
    2-byte tag word and no field each (lanes past the end count as tag 0)."""
    t = np.zeros(-(-tags.size // 8) * 8, np.uint8)
    t[:tags.size] = tags.reshape(-1)
    return float(np.mean(~t.reshape(-1, 8).any(axis=1))) if t.size else 0.0


def copy_rounds(name, values: np.ndarray, *, k=golden.K_DEFAULT, rounds=5, repeat=7,
                codecs=("paper", "bounded"), extra=None):
    """One core, the copy against pack and unpack into buffers made once, in `rounds`
    rounds of (copy, pack, unpack, unpack with the ring's index) in turn, each the best
    of `repeat` runs (for the bounded codec, where the host runs a faster kernel, the
    portable kernels too: _portable_steps): returns {"buffer", "bytes", "zero_groups": {codec: share},
    "ratio": {codec: bytes / packed bytes}, codec: {"copy", "pack", "unpack", "unpack_idx": [seconds per round]}}. "unpack"
    reads the stream alone (the NIC's wire: no index); "unpack_idx" also the byte
    offset of every RING_EVERY-th group, which the ring carries (golden.fast_index).
    Both decoders' values are checked against golden's once before timing. `extra`
    ({label: fn}) is timed in the same rounds, after the copy, for the first codec."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    dst = np.empty_like(bits)
    out = {"buffer": name, "bytes": values.nbytes, "zero_groups": {}}
    for codec in codecs:
        room = np.empty(fast.pack_room(bits.size), np.uint8)
        words = np.empty(fast.unpack_room(bits.size), np.uint32)
        index = np.empty(-(-(-(-bits.size // 8)) // RING_EVERY), np.int64)
        packed = room[:fast.fast_pack_groups_into(bits, room, k, codec, index, RING_EVERY)].copy()
        tags, _, _, decoded = golden.compression_block(bits, k, codec)
        out["zero_groups"][codec] = zero_group_share(tags)
        out.setdefault("ratio", {})[codec] = values.nbytes / packed.size
        want = decoded.astype("<u4").tobytes()
        fast.fast_unpack_groups_into(packed, bits.size, words, k, codec)
        if words[:bits.size].tobytes() != want:
            raise RuntimeError(f"fast unpack {CODEC_TAGS[codec]} restored values other than the model's")
        words[:] = 0
        fast_index.fast_unpack_groups_indexed_into(packed, bits.size, words, index, RING_EVERY, k, codec)
        if words[:bits.size].tobytes() != want:
            raise RuntimeError(f"indexed unpack {CODEC_TAGS[codec]} restored values other than the model's")
        steps: list[tuple[str, Callable[[], object]]] = [("copy", lambda: np.copyto(dst, bits))]
        if extra and codec == codecs[0]:
            steps += list(extra.items())
        steps += [("pack", lambda: fast.fast_pack_groups_into(bits, room, k, codec)),
                  ("unpack", lambda: fast.fast_unpack_groups_into(packed, bits.size, words, k, codec)),
                  ("unpack_idx", lambda: fast_index.fast_unpack_groups_indexed_into(
                      packed, bits.size, words, index, RING_EVERY, k, codec))]
        if codec == "bounded" and fast_kernels.KERNEL != "portable":
            steps += _portable_steps(bits, packed, room, words, k, codec)
        times: dict[str, list[float]] = {what: [] for what, _ in steps}
        for _ in range(rounds):
            for what, fn in steps:
                times[what].append(_best_time(fn, repeat, math.inf)[0])
        out[codec] = times
    return out


def _portable_steps(bits, packed, room, words, k, codec):
    """The portable kernels (what a CPU without AVX2 runs) on the same buffers, timed in
    the same rounds as the host's: the speed-up of the host's kernel in one run."""
    pack, unpack, _ = fast_kernels.BY_NAME["portable"]
    ec, dc = fast.enc_consts(k, codec), fast.dec_consts(k, codec)
    groups, tag = -(-bits.size // 8), CODEC_TAGS[codec]
    return [(f"pack {tag}, portable kernel", lambda: pack(bits, *ec, room, _NO_MARKS, 0, 0, 0)),
            (f"unpack {tag}, portable kernel", lambda: unpack(packed, groups, words, *dc))]


_NO_MARKS = np.zeros(0, np.int64)


def scale_chunks(values: np.ndarray, k: int, chunk: int | None = None,
                 out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(values 2^-s per chunk, the s of each chunk): what the DDP hook's default
    (ScaledCodec, the scale-following bound) hands its codec, chunk by chunk of the
    socket ring's `chunk` floats (default ring.DEFAULT_CHUNK), s from ScaledCodec's own
    choice. The bounded codec codes each value alone and a chunk is whole groups, so
    packing the result in one go gives the chunks' frames back to back, less their
    scale bytes. Into `out` if given (float32, the values' size): the timed rounds reuse
    one, so that they time the scaling, not the faulting-in of a fresh buffer's pages."""
    from inceptionn.drivers.collectives.codecs import ScaledCodec
    from inceptionn.drivers.collectives.transports.socket_ring import DEFAULT_CHUNK

    chunk = DEFAULT_CHUNK if chunk is None else chunk
    codec = ScaledCodec(k)
    values = np.ascontiguousarray(values, dtype=np.float32)
    out = np.empty_like(values) if out is None else out
    scales = np.empty(-(-values.size // chunk), np.int16)
    for j, i in enumerate(range(0, values.size, chunk)):
        scales[j], _ = codec.scale_down(values[i:i + chunk], out=out[i:i + chunk])
    return out, scales


_ROUND_LABELS = {"pack": "pack", "unpack": "unpack", "unpack_idx": "unpack with the ring's index"}


def format_rounds(res) -> str:
    """copy_rounds' result as one line: medians of the rounds, and per method the median
    and range of the per-round shares of the copy (copy time / method time); the header
    gives each codec's share of zero groups."""
    copy_all = [t for c in CODEC_TAGS if c in res for t in res[c]["copy"]]
    parts = [f"copy {res['bytes'] / float(np.median(copy_all)) / 1e9:.3g} GB/s"]
    for codec, tag in CODEC_TAGS.items():
        if codec not in res:
            continue
        t = res[codec]
        labels = {w: w for w in t if w != "copy" and w not in _ROUND_LABELS}
        for what, label in {**labels, **_ROUND_LABELS}.items():
            shares = [c / m for c, m in zip(t["copy"], t[what])]
            name = label if what in labels else f"{label} {tag}"
            parts.append(f"{name} {res['bytes'] / float(np.median(t[what])) / 1e9:.3g} GB/s = "
                         f"{float(np.median(shares)):.0%} ({min(shares):.0%}-{max(shares):.0%})")
    n = len(next(res[c] for c in CODEC_TAGS if c in res)["copy"])
    zeros = ", ".join(f"{CODEC_TAGS[c]} {z:.1%}" for c, z in res.get("zero_groups", {}).items())
    ratios = ", ".join(f"{CODEC_TAGS[c]} {r:.2f}" for c, r in res.get("ratio", {}).items())
    return (f"one core vs numpy copy, medians of {n} rounds, {res['buffer']} (zero groups: {zeros}; "
            f"ratio: {ratios}): " + "; ".join(parts))


COPY_TARGET = 0.5     # the codec's target: half a same-core copy each way (v2, the host's kernel)


def format_targets(rounds, kernel: str) -> str:
    """The target lines of copy_rounds' results: per buffer, v2's pack and unpack through
    the host's kernel (`kernel`, named), the median of the per-round shares of the copy
    against COPY_TARGET, met or MISSED."""
    lines = [f"Targets: codec >= {COPY_TARGET:.1f} of a same-core copy each way, one core, "
             f"kernel {kernel} (medians of the rounds; the rounds' range in brackets):"]
    for res in rounds:
        t = res.get("bounded")
        if t is None:
            continue
        parts = []
        for what in ("pack", "unpack"):
            shares = [c / m for c, m in zip(t["copy"], t[what])]
            med = float(np.median(shares))
            parts.append(f"{what} {med:.2f} ({min(shares):.2f}-{max(shares):.2f})"
                         + ("" if med >= COPY_TARGET else ": MISSED"))
        lines.append(f"  {res['buffer']}: " + "; ".join(parts))
    return "\n".join(lines)


MLP_SIZES = (64, 3000, 3000, 1000, 10)     # bench train's 12.2M-parameter MLP


def mlp_net(sizes=MLP_SIZES):
    """The MLP of `bench train` (sizes: its layers' widths, ReLU between), seeded as
    bench_train._model seeds it, so that the default sizes give the same parameters."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
    return nn.Sequential(*layers)


def mlp_bucket(steps: int = 3, seed: int = 0, cache_dir=None, sizes=MLP_SIZES) -> np.ndarray:
    """The gradient DDP hands over as one bucket for the MLP of `sizes` (by default
    `bench train`'s 12.2M-parameter 64-3000-3000-1000-10: all its parameters' gradients,
    float32, 48.8 MB) after `steps` SGD steps on digits (batch 64, lr 0.05), cached in
    cache_dir as a .npy."""
    if sizes[0] != 64 or sizes[-1] != 10:
        raise ValueError(f"the MLP takes digits' 64 pixels to 10 classes, got sizes {sizes}")
    tag = "" if tuple(sizes) == MLP_SIZES else "_" + "-".join(map(str, sizes))
    name = f"mlp_bucket{tag}_steps{steps}_seed{seed}.npy"
    path = Path(cache_dir) / name if cache_dir is not None else None
    if path is not None and path.exists():
        return np.load(path)
    import torch

    from inceptionn import gradients

    net = mlp_net(sizes)
    data = gradients.load_digits_split(seed)
    rng = np.random.default_rng(seed)
    # Plain SGD by hand, as torch.optim.SGD steps without momentum (p -= lr grad): its
    # import pulls in torch._dynamo, seconds of start-up for a few steps.
    for _ in range(steps):
        pick = rng.integers(0, len(data.y_train), 64)
        net.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(torch.from_numpy(data.x_train[pick])),
                                                 torch.from_numpy(data.y_train[pick]))
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p.add_(p.grad, alpha=-0.05)
    grad = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy().astype(np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, grad)
        tmp.replace(path)
    return grad


def both_bounds_rounds(name, values, *, k, rounds, repeat, progress=None):
    """copy_rounds on `values` as they are (the absolute bound 2^-k, both codecs) and as
    the DDP hook's default codes them (scale_chunks first, outside the timed pack and
    unpack: the bounded codec on the scaled values; the scaling itself is timed in the
    same rounds as its own row)."""
    if progress:
        progress(f"{name}: {rounds} rounds of copy, pack, unpack (absolute 2^-{k}, then scaled)")
    out = [copy_rounds(f"{name}, absolute 2^-{k}", values, k=k, rounds=rounds, repeat=repeat)]
    scaled, _ = scale_chunks(values, k)
    into = np.empty_like(scaled)
    out.append(copy_rounds(f"{name}, scaled as the default hook", scaled, k=k, rounds=rounds,
                           repeat=repeat, codecs=("bounded",),
                           extra={"choosing and applying the scales (compiled)":
                                  lambda: scale_chunks(values, k, out=into)}))
    return out


def run_bench(size=DEFAULT_SIZE, *, k=golden.K_DEFAULT, seed=0, real=True, real_steps=None,
              cache_dir=None, repeat=3, budget=5.0, progress=None, rounds=0, mlp=True):
    """Benchmark the synthetic buffer and (if `real`) the demo's gradients; with rounds,
    also copy_rounds on each, the real gradients and (if `mlp`) the MLP's DDP bucket
    (mlp_bucket) both at the absolute bound and scaled as the DDP hook's default
    (both_bounds_rounds); the rounds are the Result list's `rounds` attribute."""
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
            results.rounds += both_bounds_rounds(f"HDC grads {_human(g.nbytes)}", g, k=k,
                                                 rounds=rounds, repeat=repeat, progress=progress)
        if rounds and mlp:
            if progress:
                progress("the 12.2M-parameter MLP's DDP bucket (training 3 steps if not cached)")
            b = mlp_bucket(cache_dir=cache_dir if cache_dir is not None else gradients.DEFAULT_CACHE)
            results.rounds += both_bounds_rounds(f"MLP bucket {_human(b.nbytes)}", b, k=k,
                                                 rounds=rounds, repeat=repeat, progress=progress)
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
