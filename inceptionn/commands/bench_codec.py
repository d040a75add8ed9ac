"""The codec per device against the device's own memcpy and fp16 cast (`make bench-codec`).

The measurement is inceptionn.bench.codec; this module is its command line.
"""

from __future__ import annotations

import sys

from ..bench.codec import format_rows, run_codec_bench, run_exchange
from ..bench.golden import parse_size
from .args import CliError


def add_arguments(ap) -> None:
    """`inceptionn bench codec`'s options."""
    ap.add_argument("--size", default="64M", help="buffer size, e.g. 64M, 1G (default %(default)s)")
    ap.add_argument("--device", action="append", default=None,
                    help="a torch device (cpu, cuda, cuda:1); repeat for several "
                         "(default: the CPU and every GPU)")
    ap.add_argument("--codec", choices=("bounded", "paper"), default="bounded")
    ap.add_argument("--k", type=int, default=10, help="error bound 2^-k (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per method, best kept")
    ap.add_argument("--threads", type=int, default=None,
                    help="CPU threads of the all-cores rows (default: the cores)")
    ap.add_argument("--exchange", action="store_true",
                    help="also time one bucket's all-reduce by two ranks per device (gloo, "
                         "fp16, the ring over point-to-point)")
    ap.add_argument("--exchange-size", default="48M",
                    help="the bucket of --exchange (default %(default)s, as DDP's 12.2M floats)")
    ap.add_argument("--exchange-chunk", type=int, default=None,
                    help="floats per round of the ring in --exchange (default: TorchRing's, "
                         "4194304)")


def run(args) -> int:
    import torch

    from .. import golden
    if args.repeat < 1:
        raise CliError("--repeat must be >= 1")
    if args.threads is not None and args.threads < 1:
        raise CliError("--threads must be >= 1")
    if args.exchange_chunk is not None and args.exchange_chunk < 1:
        raise CliError("--exchange-chunk must be >= 1")
    try:
        parse_size(args.size)
        parse_size(args.exchange_size)
        golden.check_k(args.k, args.codec)
        for d in args.device or []:
            dev = torch.device(d)
            if dev.type == "cuda" and (not torch.cuda.is_available()
                                       or (dev.index or 0) >= torch.cuda.device_count()):
                raise ValueError(f"device {d}: torch sees no such GPU")
            if dev.type not in ("cpu", "cuda"):
                raise ValueError(f"device {d}: only cpu and cuda are measured")
    except (ValueError, RuntimeError) as e:
        raise CliError(str(e))

    def progress(msg):
        print(f"  ... {msg}", file=sys.stderr, flush=True)

    rows = run_codec_bench(args.size, devices=args.device, k=args.k, codec=args.codec,
                           repeat=args.repeat, threads=args.threads, progress=progress)
    names = {str(torch.device(r["device"])) for r in rows}
    for d in sorted(names):
        if d.startswith("cuda"):
            print(f"{d}: {torch.cuda.get_device_name(torch.device(d))}")
    from inceptionn.golden import fast_kernels
    print(fast_kernels.describe())
    print(f"codec {args.codec} at 2^-{args.k}, N(0, 1e-3) float32, {args.size}; GB/s over "
          f"float32 bytes, best of {args.repeat}; x memcpy against that device's memcpy")
    print(format_rows(rows))
    if args.exchange:
        from ..drivers.collectives.transports.torch_ring import DEFAULT_CHUNK
        n = parse_size(args.exchange_size) // 4
        chunk = args.exchange_chunk or DEFAULT_CHUNK
        for d in sorted(names):
            progress(f"exchange on {d}")
            ex = run_exchange(d, n, args.codec, args.k, chunk)
            coded = ex.pop("coded bytes per rank")
            code, wire = ex.pop("coding alone"), ex.pop("wire alone")
            threads = ex.pop("codec threads")
            base = ex["gloo all_reduce"]
            print(f"P = 2 on {d}, one bucket of {n} floats, rounds of {chunk} "
                  f"(gloo; median of 5): "
                  + "; ".join(f"{m} {s * 1e3:.1f} ms ({s / base:.2f} x gloo)" for m, s in ex.items())
                  + f"; the ring sent {coded / 1e6:.1f} MB per rank per call")
            ring = ex["TorchRing pipelined"]
            where = "on the GPU" if d.startswith("cuda") else f"{threads} threads"
            print(f"  TorchRing pipelined {ring * 1e3:.1f} ms against its coding alone "
                  f"{code * 1e3:.1f} ms ({where}) and its wire alone {wire * 1e3:.1f} ms: "
                  f"{ring / max(code, wire):.2f} x max(coding, wire), {ring / (code + wire):.2f} x their sum")
    return 0
