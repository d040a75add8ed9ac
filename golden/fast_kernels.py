"""The block kernels golden.fast runs on this host, bound by the name fast_host.py chose
(fast_host.KERNEL): pack_blocks, unpack_blocks and unpack_marked (the unpack that also
records the ring's index). BY_NAME has every kernel's three, for
tests and benchmarks that run a kernel the host did not choose (on any x86-64 CPU the
avx512 ones run too: LLVM spells the missing instructions out, correct and slow).
"""

from __future__ import annotations

from .fast_blocks import unpack_expand, unpack_marked as _expand_marked
from .fast_groups import (pack_compress, pack_shuffle, pack_vector, unpack_shuffle, unpack_shuffle_marked, unpack_vector,
                          unpack_vector_marked)
from .fast_host import KERNEL, KERNELS, host_kernels

__all__ = ["KERNEL", "KERNELS", "BY_NAME", "pack_blocks", "unpack_blocks", "unpack_marked",
           "describe"]

BY_NAME = {
    "avx512": (pack_compress, unpack_expand, _expand_marked),
    "avx2": (pack_shuffle, unpack_shuffle, unpack_shuffle_marked),
    "portable": (pack_vector, unpack_vector, unpack_vector_marked),
}
pack_blocks, unpack_blocks, unpack_marked = BY_NAME[KERNEL]

_HOW = {"avx512": "AVX-512 VBMI2: vpcompressb, vpexpandb", "avx2": "AVX2: pshufb byte shuffles",
        "portable": "portable vector code, a group in registers"}


def describe() -> str:
    """One line for benchmarks: the kernel that runs, and what the host could run."""
    return (f"codec kernel: {KERNEL} ({_HOW[KERNEL]}); this CPU runs {', '.join(host_kernels())}; "
            f"INCEPTIONN_CODEC_KERNEL picks another")
