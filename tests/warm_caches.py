"""Fill the caches that parallel test workers would each fill again, once, before they
start (make test runs it first).

Why: numba compiles a kernel on its first use in a process and writes it to its on-disk
cache, and amaranth's built-in yosys compiles its WebAssembly on first use; neither takes
a lock, so in a fresh clone every worker (and every rank) that reached a kernel before
the cache was written compiled the same code (the codec's kernels: 11 CPU-s, the software NIC's
switch 24; amaranth's yosys: 5). Run: `python tests/warm_caches.py`.

Python's bytecode is left to the workers: a collection run here first took 11 s off the
workers' start (19 s -> 8) and put 11 s on this step (both cores are busy either way).
"""

import sys


def warm_codecs(nic=True):
    """The codec's kernels as the ring, the hook and the software NIC use them (and the
    switch's, with `nic`)."""
    import numpy as np

    from inceptionn import golden
    from inceptionn.drivers.collectives.codecs import ScaledCodec, WireCodec
    from inceptionn.drivers.collectives.memory import LossRecorder
    golden.fast.warm_up()
    x = np.random.default_rng(0).normal(0, 1e-3, 1 << 16).astype(np.float32)
    for n in (x.size, 1000):
        v = x[:n].copy()
        for name in ("paper", "bounded"):
            c = WireCodec(name, 10)
            c.decode(c.encode(v), n)
        s = ScaledCodec(10)
        s.decode(s.encode(v), n)
        scale, down = s.scale_down(v)
        ScaledCodec.scale_up(down, scale)
        rec = LossRecorder(s)            # error feedback's one pass (golden.fast_keep)
        rec.start(v)
        rec.encode_keep(v)
        wire = rec.encode_frames(v, 1 << 14, keep=True)     # a chunk's frames in one call
        rec.stop()
        s.decode_frames(wire, v, 1 << 14, add=True)
    import torch

    from inceptionn.drivers.collectives.fp16 import round_half, widen_sum
    loss = np.empty_like(x)      # the fp16 path's one pass; with a loss, and a residual
    round_half(torch.from_numpy(x), 2)
    round_half(torch.from_numpy(x), 2, loss)
    h = round_half(torch.from_numpy(x), 2, loss, loss)
    widen_sum(h, 2, out=torch.from_numpy(loss))
    widen_sum(h, 2, out=torch.from_numpy(loss), mean=False)
    warm_every_kernel(x)
    if nic:
        warm_nic()


def warm_nic():
    """The software NIC's switch: about 24 CPU-s cold."""
    from inceptionn.drivers import nic_workers
    nic_workers.warm_up()


def warm_every_kernel(x):
    """Every block kernel (the tests run those the host did not choose too), once."""
    import numpy as np

    from inceptionn.golden import fast, fast_kernels
    bits = x.view(np.uint32)
    room = np.empty(fast.pack_room(bits.size), np.uint8)
    marks = np.zeros(bits.size, np.int64)
    for pack, unpack, marked in fast_kernels.BY_NAME.values():
        for codec in ("paper", "bounded"):
            end = int(pack(bits, *fast.enc_consts(10, codec), room, marks, 16, 0, 0))
            out = np.empty(bits.size + 8, np.uint32)
            consts = fast.dec_consts(10, codec)
            unpack(room[:end], bits.size // 8, out, *consts)
            if marked is not None:
                marked(room[:end], bits.size // 8, out, *consts, marks.view(np.uint64), 16)


if __name__ == "__main__" and sys.argv[1:] == ["--nic"]:
    warm_nic()
elif __name__ == "__main__":
    import threading
    # Amaranth's yosys compiles in a child process: beside the kernels, not before them.
    import subprocess

    from inceptionn.rtl.harness import warm_yosys
    yosys = threading.Thread(target=warm_yosys)
    yosys.start()
    # The switch's kernels in a second process, beside the codec's: cold, one process took
    # 57 CPU-s in 60 s, two take 65 in 38 (the switch compiles a few of the codec's again).
    switch = subprocess.Popen([sys.executable, __file__, "--nic"])
    warm_codecs(nic=False)
    yosys.join()
    if switch.wait():
        sys.exit(f"warming the switch's kernels failed (exit {switch.returncode})")
