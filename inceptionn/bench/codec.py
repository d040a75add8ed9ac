"""The codec per device against the device's own memcpy and fp16 cast (`make bench-codec`).

For each device (the CPU, and every CUDA GPU torch sees unless --device narrows it) one
float32 buffer drawn from N(0, 1e-3) is timed, in the same run, through:
  memcpy        a copy into a buffer made once (torch copy_ on the device)
  fp16 cast     a cast to float16 into a buffer made once (what torch's fp16 hook does)
  device pack   the device codec (drivers/collectives/device_codec.py): golden's group
                bytes plus the index beside them, by Triton kernels on CUDA where
                triton imports (and, for comparison, by torch operations), by
                golden.fast on the CPU (the path column says which)
  device unpack its decode back to float32
and, on the CPU, golden.fast's compiled kernels into buffers made once: on one core
(fast pack / fast unpack) and on every core (the buffer cut in one piece per thread; the
loops release the GIL), as the software ring codes its chunks. GB/s is over the float32
bytes (in to pack, out of unpack), best of --repeat runs; "x memcpy" is the method's
GB/s over the memcpy's on that device; ratio is float32 bytes over coded bytes (index
included); path is the code that ran (torch ops, triton, golden.fast, numba: golden.fast
called directly). Every coded result is
checked against golden's bytes before it is timed.

--exchange: two ranks (processes, one torch intra-op thread each, as torchrun sets
them; the device codec's pieces still use every core) on the device under gloo
all-reduce one bucket of --exchange-size floats, median of 5 after a warm-up: gloo's
all_reduce (what DDP's default hook does), the fp16 hook's (cast, all_reduce, cast
back) and the INCEPTIONN ring over point-to-point (TorchRing: coded on the device,
only coded bytes leave it), pipelined (round i + 1 coded while round i is in flight)
and unpipelined (the rounds one after the other), both in rounds of --exchange-chunk
floats (default TorchRing's, as the hook's torch transport uses). Both ranks share the one
device (NCCL needs a GPU per rank). Then the pipelined ring's call against its parts,
each alone on rank 0 (median of 5): its coding alone (every round's encode, the owner's
roundtrip, a decode and add of as many bytes; on the CPU the device codec's pieces on
every core) and its wire alone (the same header and message sizes, all posted at
once, no coding): the pipelining's target is max(coding, wire), its failure their sum.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import time

import numpy as np

from .golden import parse_size

__all__ = ["run_codec_bench", "format_rows", "run_exchange"]


def _timer(device):
    import torch
    if device.type == "cuda":
        def sync():
            torch.cuda.synchronize(device)
    else:
        def sync():
            pass

    def best(fn, repeat):
        fn()                                  # warm: compile, allocate, page in
        sync()
        b = float("inf")
        for _ in range(repeat):
            sync()
            t = time.perf_counter()
            fn()
            sync()
            b = min(b, time.perf_counter() - t)
        return b
    return best


def _device_rows(device, x_np, k, codec, repeat, threads):
    import torch

    from ..drivers.collectives.device_codec import DeviceCodec
    from ..golden import fast
    best = _timer(device)
    x = torch.from_numpy(x_np).to(device)
    nbytes = x.numel() * 4
    rows = []

    def add(method, seconds, coded=None, path="torch ops"):
        rows.append({"device": str(device), "method": method, "gbps": nbytes / seconds / 1e9,
                     "ratio": nbytes / coded if coded else None, "path": path})

    dst = torch.empty_like(x)
    half = torch.empty(x.shape, dtype=torch.float16, device=device)
    add("memcpy", best(lambda: dst.copy_(x), repeat))
    add("fp16 cast", best(lambda: half.copy_(x), repeat))
    want = fast.fast_pack_groups(x_np.view(np.uint32), k, codec)
    ref = np.empty(fast.unpack_room(x_np.size), np.uint32)
    fast.fast_unpack_groups_into(np.frombuffer(want, np.uint8), x_np.size, ref, k, codec)
    # The path DeviceCodec takes by itself, and where that is Triton, the torch
    # operations too (the reference and fallback) for comparison.
    # (On the CPU, torch operations run at a few MB/s: not timed; tests check them.)
    impls = ["auto"] + (["torch"] if device.type == "cuda"
                        and DeviceCodec(codec, k).path(device) != "torch ops" else [])
    for impl in impls:
        dc = DeviceCodec(codec, k, impl=impl)
        path = dc.path(device)
        data, index = dc.encode(x)
        if data.cpu().numpy().tobytes() != want:
            raise RuntimeError(f"device pack ({path}) on {device} gave bytes other than golden's")
        coded = data.numel() + 4 * index.numel()
        add("device pack", best(lambda: dc.encode(x), repeat), coded, path)
        dec = dc.decode(data, index, x.numel())
        if dec.cpu().view(torch.int32).numpy().view(np.uint32).tobytes() != ref[:x_np.size].tobytes():
            raise RuntimeError(f"device unpack ({path}) on {device} gave values other than golden's")
        add("device unpack", best(lambda: dc.decode(data, index, x.numel()), repeat), coded, path)
    if device.type == "cpu":
        rows += _fast_rows(x_np, k, codec, repeat, threads, best, want)
    return rows


def _fast_rows(x_np, k, codec, repeat, threads, best, want):
    """golden.fast on one core and on `threads` cores (one piece of the buffer each)."""
    from ..golden import fast
    bits = x_np.view(np.uint32)
    n = bits.size
    room = np.empty(fast.pack_room(n), np.uint8)
    words = np.empty(fast.unpack_room(n), np.uint32)
    packed = np.frombuffer(want, np.uint8)
    rows = []

    def add(method, seconds):
        rows.append({"device": "cpu", "method": method, "gbps": n * 4 / seconds / 1e9,
                     "ratio": n * 4 / len(want), "path": "numba"})

    add("fast pack, 1 core", best(lambda: fast.fast_pack_groups_into(bits, room, k, codec), repeat))
    add("fast unpack, 1 core",
        best(lambda: fast.fast_unpack_groups_into(packed, n, words, k, codec), repeat))
    if threads > 1:
        cuts = [(n * i // threads // 8 * 8, n * (i + 1) // threads // 8 * 8 if i < threads - 1 else n)
                for i in range(threads)]
        rooms = [np.empty(fast.pack_room(b - a), np.uint8) for a, b in cuts]
        outs = [np.empty(fast.unpack_room(b - a), np.uint32) for a, b in cuts]
        pieces = [fast.fast_pack_groups(bits[a:b], k, codec) for a, b in cuts]
        with cf.ThreadPoolExecutor(threads) as pool:
            def pack_all():
                list(pool.map(lambda i: fast.fast_pack_groups_into(
                    bits[cuts[i][0]:cuts[i][1]], rooms[i], k, codec), range(threads)))

            def unpack_all():
                list(pool.map(lambda i: fast.fast_unpack_groups_into(
                    pieces[i], cuts[i][1] - cuts[i][0], outs[i], k, codec), range(threads)))
            add(f"fast pack, {threads} threads", best(pack_all, repeat))
            add(f"fast unpack, {threads} threads", best(unpack_all, repeat))
    return rows


def _exchange_rank(rank, world, port, device, n, codec, k, chunk, q):
    import datetime
    import statistics

    import torch
    import torch.distributed as dist

    from ..drivers.collectives.transports.torch_ring import TorchRing
    # One intra-op thread per rank, as torchrun sets for several processes per machine:
    # with more, torch's OpenMP threads of both ranks spin against each other (on 2
    # shared cores the ring's adds ran 16-70x slower).
    torch.set_num_threads(1)
    try:
        store = dist.TCPStore("127.0.0.1", port, world, rank == 0,
                              timeout=datetime.timedelta(seconds=120))
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
        dev = torch.device(device)
        x0 = torch.randn(n, generator=torch.Generator().manual_seed(rank)).mul_(1e-3).to(dev)
        ring = TorchRing(codec=codec, k=k, chunk=chunk)
        plain = TorchRing(codec=codec, k=k, chunk=chunk, pipeline=False)
        sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)

        def fp16(t):
            h = t.half()
            dist.all_reduce(h)
            t.copy_(h)

        out = {}
        for name, fn in (("gloo all_reduce", dist.all_reduce), ("fp16 hook", fp16),
                         ("TorchRing pipelined", ring.allreduce),
                         ("TorchRing unpipelined", plain.allreduce)):
            times = []
            for i in range(6):
                t = x0.clone()
                sync()
                dist.barrier()
                t0 = time.perf_counter()
                fn(t)
                sync()
                if i:                          # the first is the warm-up
                    times.append(time.perf_counter() - t0)
            out[name] = statistics.median(times)
        out["coded bytes per rank"] = ring.bytes_sent / 6         # 6 calls
        out["codec threads"] = ring.codec.threads
        out["coding alone"] = statistics.median(_coding_alone(ring, x0, sync) for _ in range(5))
        wire = _wire_alone(ring, n, dev)
        wire()                                 # warm-up
        out["wire alone"] = statistics.median(wire() for _ in range(5))
        dist.destroy_process_group()
        q.put((rank, out))
    except BaseException as e:  # reported by the parent
        q.put((rank, f"{type(e).__name__}: {e}"))


def _coding_alone(ring, x0, sync):
    """Seconds of the codec work of one pipelined call of `ring` on x0's values, without
    the wire: per round the encode of what it sends (and the owner's roundtrip), then
    the decode and add of as many bytes (its own, standing in for the neighbour's)."""
    import torch
    t = x0.clone()
    sync()
    t0 = time.perf_counter()
    for rd in ring.plan(t.numel()):
        if rd.out is None:
            continue
        view = t[rd.out[0]:rd.out[1]]
        data, index = ring.codec.encode(view)
        if rd.keep:
            view.copy_(ring.codec.roundtrip(view))
        got = ring.codec.decode(data, index, view.numel())
        torch.add(got, view, out=view)
    sync()
    return time.perf_counter() - t0


def _wire_alone(ring, n, dev):
    """A function timing one replay of the ring's last call on the wire alone: every
    round's header and message (the same sizes) sent to the next rank and received from
    the one before, all posted at once, no coding and no waiting between rounds (sizes
    from ring.message_bytes, the neighbour's gathered once): the wire's least time."""
    import torch
    import torch.distributed as dist
    plan = ring.plan(n)
    mine = iter(ring.message_bytes)
    sizes = [next(mine) if rd.out is not None else 0 for rd in plan]
    every: list = [None] * ring.world
    dist.all_gather_object(every, sizes)
    theirs = every[(ring.rank - 1) % ring.world]
    cdev = ring._comm_device(torch.empty(0, device=dev))
    nxt, prv = (ring.rank + 1) % ring.world, (ring.rank - 1) % ring.world
    bufs = [(torch.zeros(a, dtype=torch.uint8, device=cdev), torch.empty(b, dtype=torch.uint8, device=cdev))
            for a, b in zip(sizes, theirs)]
    hdr = torch.zeros(3, dtype=torch.int64, device=cdev)
    hdr_in = torch.empty(3, dtype=torch.int64, device=cdev)

    def replay():
        t0 = time.perf_counter()
        ops = []
        for rd, (out, inc) in zip(plan, bufs):
            if rd.out is not None:
                ops += [dist.P2POp(dist.isend, hdr, nxt)] + ([dist.P2POp(dist.isend, out, nxt)] if out.numel() else [])
            if rd.inc is not None:
                ops += [dist.P2POp(dist.irecv, hdr_in, prv)] + ([dist.P2POp(dist.irecv, inc, prv)] if inc.numel() else [])
        for w in dist.batch_isend_irecv(ops) if ops else []:
            w.wait()
        return time.perf_counter() - t0
    return replay


def run_exchange(device, n, codec="bounded", k=10, chunk=1 << 22):
    """{method: median seconds} of rank 0 (see the module's docstring)."""
    import multiprocessing as mp
    import socket
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_exchange_rank, args=(r, 2, port, device, n, codec, k, chunk, q))
             for r in range(2)]
    for p in procs:
        p.start()
    try:
        res = dict(q.get(timeout=600) for _ in procs)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    for r, v in res.items():
        if isinstance(v, str):
            raise RuntimeError(f"exchange rank {r} failed: {v}")
    return res[0]


def run_codec_bench(size=64 << 20, *, devices=None, k=10, codec="bounded", repeat=5,
                    threads=None, seed=0, progress=None):
    """Rows {device, method, gbps, ratio, path, x_memcpy} for every device."""
    import torch
    if devices is None:
        devices = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    x = np.random.default_rng(seed).normal(0.0, 1e-3, parse_size(size) // 4).astype(np.float32)
    threads = threads or os.cpu_count() or 1
    rows = []
    for name in devices:
        device = torch.device(name)
        if progress:
            progress(f"{device}")
        got = _device_rows(device, x, k, codec, repeat, threads)
        base = got[0]["gbps"]
        for r in got:
            r["x_memcpy"] = r["gbps"] / base
        rows += got
    return rows


def format_rows(rows) -> str:
    head = f"{'device':<8} {'method':<24} {'GB/s':>9} {'x memcpy':>9} {'ratio':>6}  path"
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = f"{r['ratio']:6.2f}" if r["ratio"] else f"{'':6}"
        lines.append(f"{r['device']:<8} {r['method']:<24} {r['gbps']:9.4g} {r['x_memcpy']:9.3g} {ratio}"
                     f"  {r.get('path', ''):<9}".rstrip())
    return "\n".join(lines)
