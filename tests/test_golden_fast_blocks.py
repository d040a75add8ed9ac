"""golden.fast's block kernels (the vectorised packer and unpacker) against the NumPy
model: every float class, every k of both codecs, lengths around the block sizes (a
packer block is 1024 values, an unpacker block 128 groups), streams cut anywhere near a
block's end, so that every switch between the block kernels and the per-group loops is
crossed."""

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.golden import fast

from test_golden_fast import EVERY_EXPONENT, SPECIAL, check_groups, same

# the loop packer (every kernel's last partial group), avx512, avx2, portable
PACKS = ["pack_pairs", "pack_compress", "pack_shuffle", "pack_vector"]
UNPACKS = ["unpack_expand", "unpack_shuffle", "unpack_vector"]        # avx512, avx2, portable


_FAMILY = {"pack_compress": "avx512", "unpack_expand": "avx512", "pack_shuffle": "avx2",
           "unpack_shuffle": "avx2", "shuffle": "avx2"}       # the rest: portable


def runnable(kernel):
    """Whether this process compiles the kernel (a name above, "avx2", "avx512" or
    "portable"): on the host's own target every x86-64 CPU compiles them all (LLVM
    spells out what the CPU lacks); a fixed numba target (NUMBA_CPU_NAME=generic, a
    portable cache) the portable ones only: there LLVM cannot select x86's pshufb or
    pext, and stops the process."""
    from numba import config
    family = _FAMILY.get(kernel, kernel if kernel in ("avx2", "avx512") else "portable")
    return family == "portable" or config.CPU_NAME in (None, "host")


def _kernel(name):
    """A block kernel by name, whichever golden.fast picked for this CPU (skipped where
    this process cannot compile it: runnable)."""
    from inceptionn.golden import fast_blocks, fast_groups
    if not runnable(name):
        pytest.skip(f"{name}: not compiled for a fixed numba target")
    return getattr(fast_groups if name.endswith(("shuffle", "vector", "compress")) else fast_blocks,
                   name)

CODEC_KS = ([("paper", k) for k in range(golden.K_MIN, golden.K_MAX + 1)]
            + [("bounded", k) for k in range(golden.EB_K_MIN, golden.EB_K_MAX + 1)])


def _mixed(rng, n):
    """n bit patterns: gradients at several scales, every sign and exponent, the special
    values (zeros, infinities, NaNs, subnormals, band edges) and random words, shuffled."""
    parts = [rng.normal(0.0, s, n).astype(np.float32).view(np.uint32) for s in (1e-4, 1e-2, 1.0)]
    parts += [EVERY_EXPONENT, SPECIAL, rng.integers(0, 2**32, n, dtype=np.uint32)]
    pool = np.concatenate(parts)
    return pool[rng.integers(0, pool.size, n)]


@pytest.mark.parametrize("codec,k", CODEC_KS, ids=[f"{c}-{k}" for c, k in CODEC_KS])
def test_every_k_on_every_float_class(codec, k):
    rng = np.random.default_rng(k)
    bits = _mixed(rng, 3 * 1024 + 517)
    same(golden.pack_groups, fast.fast_pack_groups, bits, k, codec)
    buf = golden.pack_groups(bits, k, codec)
    same(golden.unpack_groups, fast.fast_unpack_groups, buf, bits.size, k, codec)


@pytest.mark.parametrize("n", [1023, 1024, 1025, 2047, 2048, 2049, 8 * 128 * 3 + 5])
@pytest.mark.parametrize("codec", ["paper", "bounded"])
def test_lengths_around_the_blocks(n, codec):
    check_groups(_mixed(np.random.default_rng(n), n), 7, codec)


@pytest.mark.parametrize("codec", ["paper", "bounded"])
def test_streams_cut_near_a_block_end(codec):
    """The unpacker's block kernel runs only where a whole block surely lies in the data;
    cut or padded anywhere near there, the result is the model's."""
    rng = np.random.default_rng(1)
    bits = _mixed(rng, 8 * 128 * 2 + 40)
    buf = golden.pack_groups(bits, 9, codec)
    for cut in list(range(4300, 4420, 7)) + list(range(len(buf) - 40, len(buf) + 1, 3)):
        same(golden.unpack_groups, fast.fast_unpack_groups, buf[:cut], bits.size, 9, codec)
    same(golden.unpack_groups, fast.fast_unpack_groups, buf + bytes(5000), bits.size, 9, codec)


@pytest.mark.parametrize("codec", ["paper", "bounded"])
def test_large_payloads(codec):
    """Whole payloads (shim, groups, tail bytes) of real-looking sizes."""
    rng = np.random.default_rng(2)
    raw = _mixed(rng, 16383).tobytes() + b"\x01\x02"
    comp = golden.compress_payload(raw, 10, codec)
    assert fast.fast_compress_payload(raw, 10, codec) == comp
    assert fast.fast_decompress_payload(comp) == golden.decompress_payload(comp)


@pytest.mark.parametrize("codec", ["paper", "bounded"])
@pytest.mark.parametrize("n", [0, 1, 9, 5000])
def test_into_variants_give_the_same_bytes(codec, n):
    bits = _mixed(np.random.default_rng(n), n)
    out = np.full(fast.pack_room(n), 0xAB, np.uint8)
    end = fast.fast_pack_groups_into(bits, out, 8, codec)
    assert out[:end].tobytes() == golden.pack_groups(bits, 8, codec)
    words = np.zeros(fast.unpack_room(n), np.uint32)
    consumed, ok = fast.fast_unpack_groups_into(out[:end], n, words, 8, codec)
    want, wc, wok = golden.unpack_groups(out[:end].tobytes(), n, 8, codec)
    assert (consumed, ok) == (wc, wok) and words[:n].tobytes() == want.tobytes()


def test_into_variants_refuse_small_or_wrong_buffers():
    bits = np.zeros(100, np.uint32)
    with pytest.raises(ValueError, match="needed"):
        fast.fast_pack_groups_into(bits, np.zeros(10, np.uint8), 10)
    with pytest.raises(ValueError, match="uint8"):
        fast.fast_pack_groups_into(bits, np.zeros(1000, np.uint32), 10)
    with pytest.raises(ValueError, match="uint32"):
        fast.fast_pack_groups_into(bits.astype(np.int64), np.zeros(1000, np.uint8), 10)
    with pytest.raises(ValueError, match="needed"):
        fast.fast_unpack_groups_into(b"\x00" * 30, 100, np.zeros(100, np.uint32), 10)


def _with_zero_runs(rng, n):
    """Mixed values with runs of zeros of every length up to 40 groups (the unpacker
    steps over four zero groups with one load), some cut by a block's end."""
    bits = _mixed(rng, n)
    i = 0
    while i < n:
        run = 8 * int(rng.integers(1, 41)) + int(rng.integers(0, 8))
        bits[i:i + run] = 0
        i += run + int(rng.integers(1, 200))
    return bits


@pytest.mark.parametrize("kernel", UNPACKS)
@pytest.mark.parametrize("codec,k", [("paper", 1), ("paper", 10), ("paper", 16),
                                     ("bounded", 1), ("bounded", 9), ("bounded", 16)])
def test_both_unpack_kernels(kernel, codec, k):
    """Each unpack kernel (one expanding load, two byte shuffles or four pair loads per
    group, decoded in registers) against the model, every float class and zero runs,
    whatever kernel golden.fast picked for this CPU."""
    from inceptionn.golden import fast_blocks
    rng = np.random.default_rng(k)
    bits = _with_zero_runs(rng, 8 * 128 * 5 + 3)
    buf = golden.pack_groups(bits, k, codec)
    want, _, _ = golden.unpack_groups(buf, bits.size, k, codec)
    # padded so that every whole block lies surely inside the data
    data = np.frombuffer(buf + bytes(34 + 8), np.uint8)
    groups = -(-bits.size // 8)
    out = np.zeros(8 * groups + 1, np.uint32)
    g, pos = _kernel(kernel)(data, groups, out, *fast_blocks.dec_consts(k, codec))
    assert g == groups          # every group that lies 8 bytes or more before the end
    m = min(8 * g, bits.size)
    assert out[:m].tobytes() == want[:m].tobytes()
    assert not out[m:8 * g].any()       # a last group's lanes past the values: tag 0
    assert pos == len(golden.pack_groups(bits[:8 * g], k, codec))


@pytest.mark.parametrize("kernel", PACKS)
@pytest.mark.parametrize("codec", ["paper", "bounded"])
def test_both_pack_kernels(kernel, codec):
    """Each pack kernel (a block's fields stored in pairs; per group in registers, one
    register compress, two byte shuffles or four pair stores) against the model, every float class and every k, with
    a partial last block; the bytes past the groups are scratch, so the room is filled
    with a pattern first."""
    from inceptionn.golden import fast_blocks
    ks = range(golden.K_MIN, golden.K_MAX + 1) if codec == "paper" else \
        range(golden.EB_K_MIN, golden.EB_K_MAX + 1)
    for k in ks:
        bits = _with_zero_runs(np.random.default_rng(100 + k), 2 * fast_blocks.BLOCK + 77)
        out = np.full(fast.pack_room(bits.size), 0xA5, np.uint8)
        marks = np.full(-(-bits.size // 8 // 16) + 1, -7, np.int64)
        end = _kernel(kernel)(bits, *fast_blocks.enc_consts(k, codec), out, marks, 16, 0, 0)
        assert out[:int(end)].tobytes() == golden.pack_groups(bits, k, codec), (codec, k)
        offsets, stop = fast.group_offsets(out[:int(end)], bits.size, 16)
        assert stop == end and marks[:-1].tolist() == offsets.tolist() and marks[-1] == -7


def test_unpack_into_exactly_n_words_writes_nothing_past_them():
    """Where n is a multiple of 8, an out of exactly n words is enough (threads decode
    pieces of one stream into adjacent slices); otherwise the tail word needs its room."""
    bits = _mixed(np.random.default_rng(4), 8 * 300)
    buf = golden.pack_groups(bits, 10, "bounded")
    whole = np.full(bits.size + 3, 0xDEADBEEF, np.uint32)
    consumed, ok = fast.fast_unpack_groups_into(buf, bits.size, whole[:bits.size], 10, "bounded")
    assert ok and consumed == len(buf)
    assert whole[:bits.size].tobytes() == golden.unpack_groups(buf, bits.size, 10, "bounded")[0].tobytes()
    assert whole[bits.size:].tolist() == [0xDEADBEEF] * 3
    with pytest.raises(ValueError, match="needed"):
        fast.fast_unpack_groups_into(buf, bits.size - 1, np.zeros(bits.size - 1, np.uint32), 10, "bounded")


@pytest.mark.parametrize("n", [0, 5, 8 * 128, 8 * 128 * 3 + 13])
@pytest.mark.parametrize("every", [1, 3, 64, 256])
def test_pack_into_fills_the_index_as_group_offsets_would(n, every):
    bits = _with_zero_runs(np.random.default_rng(n + every), n)
    out = np.empty(fast.pack_room(n), np.uint8)
    index = np.full(-(-(-(-n // 8)) // every), -1, np.int64)
    end = fast.fast_pack_groups_into(bits, out, 10, "bounded", index=index, every=every)
    offsets, stop = fast.group_offsets(out[:end], n, every)
    assert stop == end and index.tolist() == offsets.tolist()
    with pytest.raises(ValueError, match="every"):
        fast.fast_pack_groups_into(bits, out, 10, "bounded", index=index, every=0)
    if index.size:
        with pytest.raises(ValueError, match="index"):
            fast.fast_pack_groups_into(bits, out, 10, "bounded", index=index[:-1], every=every)


@pytest.mark.parametrize("kernel", PACKS + UNPACKS)
def test_kernels_take_strided_views(kernel):
    """The kernels read their input by address: a strided view (every other word or
    byte of a larger array) gives the bytes and values of its contiguous copy."""
    from inceptionn.golden import fast_blocks
    bits = _with_zero_runs(np.random.default_rng(3), 8 * 128 * 3 + 5)
    if kernel.startswith("pack"):
        view = np.repeat(bits, 2)[::2]
        out = np.zeros(fast.pack_room(bits.size), np.uint8)
        end = _kernel(kernel)(view, *fast_blocks.enc_consts(10, "bounded"), out,
                                 np.zeros(1, np.int64), 0, 0, 0)
        assert out[:int(end)].tobytes() == golden.pack_groups(bits, 10, "bounded")
        return
    buf = golden.pack_groups(bits, 10, "bounded") + bytes(34 + 8)
    view = np.repeat(np.frombuffer(buf, np.uint8), 2)[::2]
    groups = -(-bits.size // 8)
    out = np.zeros(8 * groups + 1, np.uint32)
    g, _ = _kernel(kernel)(view, groups, out, *fast_blocks.dec_consts(10, "bounded"))
    want = golden.unpack_groups(golden.pack_groups(bits, 10, "bounded"), bits.size, 10, "bounded")[0]
    m = min(8 * g, bits.size)
    assert g > 0 and out[:m].tobytes() == want[:m].tobytes()


@pytest.mark.parametrize("coder", ["compress", "shuffle", "pairs"])
@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("every,g_base", [(1, 0), (3, 2), (16, 5), (16, 0), (0, 0)])
def test_group_pack_with_and_without_zero_blocks(coder, skip, every, g_base):
    """The group packers' two loops (every group coded alone; blocks of four groups, a
    block wholly in the 0-bit band written as its zero tag words by one store), with
    either coder (AVX2's shuffles, the portable pairs): the model's bytes, and the marks
    of a piece that starts at group g_base and byte 1000 of a larger stream, whatever
    runs of zeros start or end inside a block."""
    from inceptionn.golden import fast_blocks, fast_groups
    if not runnable("avx512" if coder == "compress" else coder):
        pytest.skip(f"{coder}: not compiled for a fixed numba target")
    tables = {"compress": fast_groups.COMPRESS_PACK, "shuffle": fast_groups.SHUFFLE_PACK,
              "pairs": fast_groups.PAIRS_PACK}[coder]
    for codec, k in (("paper", 1), ("paper", 10), ("bounded", 9), ("bounded", 16)):
        bits = _with_zero_runs(np.random.default_rng(every + k), 8 * 128 * 3 + 61)
        out = np.full(fast.pack_room(bits.size), 0xA5, np.uint8)
        groups = -(-bits.size // 8)
        marks = np.full((g_base + groups) // max(every, 1) + 2, -7, np.int64)
        end = int(fast_groups.pack_groups_with(bits, *fast_blocks.enc_consts(k, codec), out, marks,
                                               every, g_base, 1000, skip, tables))
        assert out[:end].tobytes() == golden.pack_groups(bits, k, codec), (codec, k)
        if every:
            offsets, _ = fast.group_offsets(out[:end], bits.size, 1)
            want = {(g_base + g) // every: 1000 + int(offsets[g]) for g in range(groups)
                    if (g_base + g) % every == 0}
            got = {j: int(m) for j, m in enumerate(marks) if m != -7}
            assert got == want, (codec, k)
        else:
            assert (marks == -7).all()


@pytest.mark.parametrize("kernel", ["pack_compress", "pack_shuffle", "pack_vector"])
def test_group_pack_skips_zero_blocks_where_sampling_finds_enough(kernel):
    """The group packers run the zero-block loop where at least 1 in SKIP_SHARE of the
    blocks they sample lies wholly in the 0-bit band, and the plain loop otherwise (the
    check costs dense data time); both give the same bytes."""
    from inceptionn.golden import fast_blocks, fast_groups as fs
    _kernel(kernel)         # skipped where it is not compiled
    per = 8 * fs.SKIP_GROUPS
    blocks = fs.SKIP_SAMPLE * fs.SKIP_SAMPLES          # every SKIP_SAMPLE-th block sampled
    t, mlim, w8 = fast_blocks.enc_consts(10, "bounded")
    tz = np.uint32(t << 23)
    rng = np.random.default_rng(5)
    dense = rng.normal(0.0, 1.0, blocks * per).astype(np.float32).view(np.uint32)
    assert not fs.sparse(dense, tz)
    for share, want in ((fs.SKIP_SHARE, True), (fs.SKIP_SHARE + 2, False)):
        bits = dense.copy()
        for j in range(0, fs.SKIP_SAMPLES, share):     # zero every share-th sampled block
            b = j * fs.SKIP_SAMPLE
            bits[b * per:(b + 1) * per] = 0
        assert bool(fs.sparse(bits, tz)) is want, share
        out = np.zeros(fast.pack_room(bits.size), np.uint8)
        end = int(getattr(fs, kernel)(bits, t, mlim, w8, out, np.zeros(0, np.int64), 0, 0, 0))
        assert out[:end].tobytes() == golden.pack_groups(bits, 10, "bounded")
    assert not fs.sparse(np.zeros(per - 1, np.uint32), tz)     # no whole block: nothing to skip
    assert fs.sparse(np.zeros(per, np.uint32), tz)


def test_group_loops_refuse_tables_no_coder_takes():
    """The group loops pick their coder by the tables they are handed (fast_groups):
    tables that fit neither coder are an error when the loop is compiled, not a
    silent pick."""
    from numba.core.errors import TypingError
    from inceptionn.golden import fast_blocks, fast_groups
    bits = np.zeros(64, np.uint32)
    out = np.zeros(fast.pack_room(bits.size), np.uint8)
    tables = (fast_groups.SPREAD,)
    with pytest.raises((TypeError, TypingError), match="no group coder takes 1 tables"):
        fast_groups.pack_groups_with(bits, *fast_blocks.enc_consts(10, "bounded"), out,
                                     np.zeros(0, np.int64), 0, 0, 0, False, tables)
