"""golden.fast's kernel choice (fast_host, fast_kernels): the host's best kernel by its CPU
features, INCEPTIONN_CODEC_KERNEL picking another, a clear error for a name that is not a
kernel or one the CPU cannot run, the portable kernels on a fixed numba target or a
non-x86 CPU; the kernels bound are the chosen one's; the cache directory is per kernel
and its stamp covers every golden/fast*.py. (The kernels' bytes: test_golden_fast_blocks,
test_golden_fast_index.)"""

from pathlib import Path

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.golden import fast, fast_host, fast_kernels

X86 = dict(machine="x86_64", cpu_name=None)
ZEN2 = {"avx2": True, "ssse3": True, "bmi2": True}
ICELAKE = dict(ZEN2, avx512vbmi2=True)


@pytest.mark.parametrize("features,machine,cpu_name,want", [
    (ICELAKE, "x86_64", None, ("avx512", "avx2", "portable")),
    (ZEN2, "x86_64", None, ("avx2", "portable")),
    ({"sse2": True}, "x86_64", None, ("portable",)),
    (ICELAKE, "aarch64", None, ("portable",)),
    (ICELAKE, "x86_64", "generic", ("portable",)),
    (ZEN2, "x86_64", "host", ("avx2", "portable")),
])
def test_host_kernels_follow_the_cpu(features, machine, cpu_name, want):
    assert fast_host.host_kernels(features, machine, cpu_name) == want


def test_the_environment_picks_a_kernel_the_cpu_runs():
    env = {fast_host.ENV: "portable"}
    assert fast_host.choose_kernel({}, features=ZEN2, **X86) == "avx2"
    assert fast_host.choose_kernel({fast_host.ENV: " "}, features=ICELAKE, **X86) == "avx512"
    assert fast_host.choose_kernel(env, features=ZEN2, **X86) == "portable"
    with pytest.raises(ValueError, match="runs only avx2, portable"):
        fast_host.choose_kernel({fast_host.ENV: "avx512"}, features=ZEN2, **X86)
    with pytest.raises(ValueError, match="kernels are avx512, avx2, portable"):
        fast_host.choose_kernel({fast_host.ENV: "neon"}, features=ZEN2, **X86)


def test_the_chosen_kernel_is_bound_and_described():
    assert fast_kernels.KERNEL in fast_host.host_kernels()
    pack, unpack, marked = fast_kernels.BY_NAME[fast_kernels.KERNEL]
    assert (fast_kernels.pack_blocks, fast_kernels.unpack_blocks, fast_kernels.unpack_marked) \
        == (pack, unpack, marked)
    assert fast.pack_blocks is pack and fast.unpack_blocks is unpack
    assert f"codec kernel: {fast_kernels.KERNEL} " in fast_kernels.describe()


def test_the_cache_is_per_kernel_and_stamped_with_every_codec_file():
    loc = fast_host._CodecLocator.from_function(fast._unpack_fast.py_func, fast.__file__)
    assert loc.get_cache_path().endswith(f"codec-{fast_kernels.KERNEL}")
    assert loc.get_source_stamp() == fast_host._sources_hash()
    assert fast_host._CodecLocator.from_function(golden.pack_groups, golden.__file__) is None


def test_the_switchs_cache_is_stamped_with_the_codec_and_its_own_files(tmp_path):
    """drivers/fastpath.py and friends compile golden.fast's functions into theirs: their
    stamp must change with an edit of golden/fast*.py or of any file of their group."""
    from inceptionn.drivers import fastpath, tso
    loc = fast_host._CodecLocator.from_function(fastpath.pump.py_func, fastpath.__file__)
    assert loc is not None and loc.get_cache_path().endswith(f"codec-{fast_kernels.KERNEL}")
    stamp = loc.get_source_stamp()
    assert stamp != fast_host._sources_hash()
    assert stamp == fast_host._group_hash(fast_host._GROUPS[Path(tso.__file__).resolve()])
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 1\n")
    fast_host.cache_with_codec(a, b)
    try:
        before = fast_host._group_hash(fast_host._GROUPS[a.resolve()])
        b.write_text("y = 2\n")
        assert fast_host._group_hash(fast_host._GROUPS[a.resolve()]) != before
    finally:
        for f in (a, b):
            fast_host._GROUPS.pop(f.resolve())


def test_every_kernel_the_host_runs_gives_the_models_bytes():
    """Through the bound functions' signatures, each of the host's kernels (the bytes of
    every kernel in detail: test_golden_fast_blocks)."""
    bits = np.random.default_rng(0).normal(0, 1e-3, 8 * 300 + 5).astype(np.float32).view(np.uint32)
    want = golden.pack_groups(bits, 10, "bounded")
    consts = fast.enc_consts(10, "bounded")
    for name in fast_host.host_kernels():
        pack, unpack, _ = fast_kernels.BY_NAME[name]
        out = np.zeros(fast.pack_room(bits.size), np.uint8)
        assert out[:int(pack(bits, *consts, out, np.zeros(0, np.int64), 0, 0, 0))].tobytes() == want
        words = np.zeros(bits.size + 8, np.uint32)
        g, _ = unpack(np.frombuffer(want + bytes(5000), np.uint8), -(-bits.size // 8), words,
                      *fast.dec_consts(10, "bounded"))
        assert g > 0 and words[:min(8 * g, bits.size)].tobytes() == \
            golden.unpack_groups(want, bits.size, 10, "bounded")[0][:8 * g].tobytes()
