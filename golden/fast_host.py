"""Which of golden.fast's block kernels this process runs, and numba's on-disk cache of
golden/fast*.py kept true to it.

Kernels (fast_kernels.py binds them):
  avx512:   fast_blocks' register compress and expanding load (AVX-512 VBMI2: vpcompressb,
            vpexpandb; and BMI2's pext);
  avx2:     fast_shuffle's byte shuffles (pshufb, movemask; any x86-64 CPU with AVX2);
  portable: fast_pairs' group coders, a group in registers in LLVM IR with no target
            intrinsic, lowered to whatever the CPU has (Arm's NEON, x86 without AVX2).
The avx2 and portable coders run in fast_groups.py's loops.
The best the host runs is chosen at import; the environment variable
INCEPTIONN_CODEC_KERNEL names another (one the host can run: a name it cannot run is an
error at import, never a silent fallback). A fixed numba target (NUMBA_CPU_NAME, a
portable cache) runs the portable kernels only.

Why a cache locator of its own: numba keys a cached function on its own file only, and
the kernels are compiled into their callers (fast.py's unpack, fast_keep's pass): after
an edit of fast_blocks.py, or in a process that picked another kernel, a caller's cached
code would still hold the old kernel. Here every function of golden/fast*.py is stamped
with the hash of all those files, and each kernel has its own cache directory, so an
edit recompiles them all and processes that picked different kernels never share
compiled code. numba itself keys each entry on the CPU's name and features. Files
elsewhere that compile these functions into their own (the software NIC's switch)
register with cache_with_codec and are stamped with golden's sources and their own.
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

from llvmlite import binding as llvm
from numba import config
from numba.core import caching

__all__ = ["KERNELS", "ENV", "host_kernels", "choose_kernel", "KERNEL", "cache_with_codec"]

KERNELS = ("avx512", "avx2", "portable")      # best first
ENV = "INCEPTIONN_CODEC_KERNEL"
_HERE = Path(__file__).resolve().parent


def host_kernels(features=None, machine=None, cpu_name=None) -> tuple[str, ...]:
    """The kernels this host runs, best first (the arguments stand in for the host's
    LLVM CPU features, platform.machine() and numba's fixed target, for tests)."""
    if cpu_name is None:
        cpu_name = config.CPU_NAME
    if cpu_name not in (None, "host"):   # a fixed target (a portable cache): no host guess
        return ("portable",)
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64"):
        return ("portable",)
    f = llvm.get_host_cpu_features() if features is None else features
    have = [k for k, needs in (("avx512", ("avx512vbmi2", "bmi2")), ("avx2", ("avx2", "ssse3")))
            if all(f.get(x, False) for x in needs)]
    return tuple(have) + ("portable",)


def choose_kernel(env=None, **host) -> str:
    """The kernel to run: INCEPTIONN_CODEC_KERNEL (from env, default os.environ) where set,
    else the host's best. A name that is not a kernel, or one the host cannot run, is a
    ValueError."""
    runs = host_kernels(**host)
    want = (os.environ if env is None else env).get(ENV, "").strip()
    if not want:
        return runs[0]
    if want not in KERNELS:
        raise ValueError(f"{ENV}={want!r}: the codec's kernels are {', '.join(KERNELS)}")
    if want not in runs:
        raise ValueError(f"{ENV}={want!r}: this CPU runs only {', '.join(runs)}")
    return want


KERNEL = choose_kernel()


def _sources_hash() -> str:
    h = hashlib.sha256(KERNEL.encode())
    for p in sorted(_HERE.glob("fast*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


# Files outside golden/ whose cached functions compile golden.fast's into their own
# (the software NIC's switch): each maps to its group, stamped together (cache_with_codec).
_GROUPS: dict[Path, tuple[Path, ...]] = {}


def cache_with_codec(*files) -> None:
    """Cache the numba functions of `files` as golden/fast*.py's are: per kernel, and
    stamped with golden/fast*.py and all of `files`, so an edit of any of them (or another
    kernel) recompiles them. Call it at the top of each of those files, before its
    functions are defined, naming the whole group."""
    group = tuple(sorted(Path(f).resolve() for f in files))
    for f in group:
        _GROUPS[f] = group


def _group_hash(group: tuple[Path, ...]) -> str:
    h = hashlib.sha256(_sources_hash().encode())
    for p in group:
        h.update(str(p).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


class _CodecLocator(caching.InTreeCacheLocator):
    """golden/fast*.py's functions (and cache_with_codec's files'): cached in a directory
    per kernel (under numba's NUMBA_CACHE_DIR where set, else beside the files), stamped
    with all their sources."""

    _stamps: dict = {}

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        base = (os.path.join(config.CACHE_DIR, self.get_suitable_cache_subpath(py_file))
                if config.CACHE_DIR else self._cache_path)
        self._cache_path = os.path.join(base, f"codec-{KERNEL}")
        self._group = _GROUPS.get(Path(py_file).resolve())

    def get_source_stamp(self):
        stamps = _CodecLocator._stamps
        if self._group not in stamps:
            stamps[self._group] = (_sources_hash() if self._group is None
                                   else _group_hash(self._group))
        return stamps[self._group]

    @classmethod
    def from_function(cls, py_func, py_file):
        p = Path(py_file).resolve()
        if p not in _GROUPS and (p.parent != _HERE or not p.name.startswith("fast")):
            return None
        return super().from_function(py_func, py_file)


if _CodecLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, _CodecLocator)
