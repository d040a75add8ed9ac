"""Processes (and threads) for the tests that run several ranks (torch.distributed, the
socket ring).

A fresh interpreter per rank ("spawn") imports torch and the package again, about 2.5 s
of CPU each, and the regression starts about 80 ranks. The forkserver imports them once
per test worker and forks every rank from that clean, single-threaded process: no rank
inherits the test runner's threads or state, as with spawn. One difference: a rank's
environment is the forkserver's (the test worker's when its first rank started), not
the caller's at start, so ranks set the variables they need themselves.
"""

import multiprocessing as mp
import threading

__all__ = ["context", "run_ranks"]

PRELOAD = ["numpy", "torch", "torch.distributed", "inceptionn.golden",
           "inceptionn.drivers.collectives", "inceptionn.ddp_hook"]

_ctx = None


def _warm_codecs():
    """Compile the codec's numba kernels here (or load them from numba's cache), once per
    test worker, before any rank starts: ranks then load them from the cache. Without
    it, in a fresh clone, the first rank test's ranks each compiled the same kernels at
    once (the 4-rank DDP training test: 39-43 s, 28-33 s with this, 19 s cached). make
    test fills the cache before the workers start (tests/warm_caches.py); this covers
    a test run on its own."""
    from warm_caches import warm_codecs
    warm_codecs()


def context():
    """The multiprocessing context the rank tests start their processes from."""
    global _ctx
    if _ctx is None:
        _warm_codecs()
        _ctx = mp.get_context("forkserver")
        _ctx.set_forkserver_preload(PRELOAD)
    return _ctx


def run_ranks(p: int, body, timeout: float = 60) -> dict:
    """body(r) for r in range(p), each rank a thread of this process; {rank: exception}:
    what a rank raises is collected, so the test asserts on it instead of a thread dying
    silently."""
    errs: dict = {}

    def guarded(r):
        try:
            body(r)
        except Exception as e:  # collected for the test
            errs[r] = e

    ts = [threading.Thread(target=guarded, args=(r,)) for r in range(p)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
    return errs
