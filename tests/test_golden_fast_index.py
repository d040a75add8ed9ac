"""golden.fast_index: the decoder that uses the ring's index (one walk that decodes as
it goes and marks the offsets the index must hold) against the NumPy model: every float
class, every k of both codecs, lengths around blocks, zero runs across index entries and
the blocks near the data's end (which go through the checked walk), every path (each
kernel's marking walk, the checked walk) on any x86-64 CPU; and
damage: a wrong index, missing or extra bytes, a wrong count or a damaged tag word is a
ValueError, never values, and both paths agree on which."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from inceptionn import golden
from inceptionn.golden import fast, fast_index

from test_golden_fast_blocks import CODEC_KS, _with_zero_runs, runnable


def _pack(bits, k, codec, every):
    room = np.empty(fast.pack_room(bits.size), np.uint8)
    index = np.empty(-(-(-(-bits.size // 8)) // every), np.int64)
    end = fast.fast_pack_groups_into(bits, room, k, codec, index, every)
    return room[:end].copy(), index


def _decode(data, n, index, every, k, codec, kernel, exact=False):
    out = np.full(n if exact else fast.unpack_room(n), 0xDEADBEEF, np.uint32)
    fast_index.fast_unpack_groups_indexed_into(data, n, out, index, every, k, codec, kernel=kernel)
    return out


@pytest.mark.parametrize("codec,k", CODEC_KS, ids=[f"{c}-{k}" for c, k in CODEC_KS])
def test_every_k_on_every_float_class(codec, k):
    """Blocks of 4 groups (zero runs step four groups at once, across index entries), a
    partial block and the blocks near the end."""
    bits = _with_zero_runs(np.random.default_rng(k), 8 * 4 * 27 + 5)
    data, index = _pack(bits, k, codec, 4)
    want = golden.compression_block(bits, k, codec)[3].astype(np.uint32)
    for kernel in (True, False):
        out = _decode(data, bits.size, index, 4, k, codec, kernel)
        assert out[:bits.size].tobytes() == want.tobytes(), (codec, k, kernel)


@pytest.mark.parametrize("every", [1, 3, 64])
@pytest.mark.parametrize("n", [1, 8, 9, 8 * 64 - 1, 8 * 64 * 9, 8 * 64 * 17 + 13, 8 * 64 * 40])
@pytest.mark.parametrize("codec", ["paper", "bounded"])
def test_lengths_and_blocks(codec, n, every):
    bits = _with_zero_runs(np.random.default_rng(n + every), n)
    data, index = _pack(bits, 10, codec, every)
    want = golden.compression_block(bits, 10, codec)[3].astype(np.uint32)
    for kernel in [k for k in (True, False, "avx2", "avx512", "portable") if not isinstance(k, str) or runnable(k)]:
        out = _decode(data, n, index, every, 10, codec, kernel)
        assert out[:n].tobytes() == want.tobytes(), (kernel, n, every)


def test_exactly_n_words_and_int32_index():
    """Where n is a multiple of 8, out may hold exactly n words (the device codec's
    pieces decode into adjacent slices of one array); an int32 index serves as well."""
    bits = _with_zero_runs(np.random.default_rng(5), 8 * 64 * 30)
    data, index = _pack(bits, 10, "bounded", 64)
    want = golden.compression_block(bits, 10, "bounded")[3].astype(np.uint32)
    whole = np.full(bits.size + 8, 7, np.uint32)
    fast_index.fast_unpack_groups_indexed_into(data, bits.size, whole[:bits.size], index.astype(np.int32),
                                               64, 10, "bounded", kernel=True)
    assert whole[:bits.size].tobytes() == want.tobytes() and (whole[bits.size:] == 7).all()


def _outcome(data, n, index, every, kernel):
    try:
        return _decode(data, n, index, every, 10, "bounded", kernel)[:n].tobytes()
    except ValueError as e:
        assert "not the groups of" in str(e) or "entries" in str(e)
        return "error"


BITS = _with_zero_runs(np.random.default_rng(9), 8 * 16 * 40 + 3)
DATA, INDEX = _pack(BITS, 10, "bounded", 16)


@pytest.mark.parametrize("kernel", [True, False, "avx512", "avx2", "portable"])
def test_damage_is_an_error(kernel):
    if isinstance(kernel, str) and not runnable(kernel):
        pytest.skip(f"{kernel}: not compiled for a fixed numba target")
    n = BITS.size

    def fails(data=DATA, index=INDEX, count=n):
        with pytest.raises(ValueError):
            _decode(data, count, index, 16, 10, "bounded", kernel)

    for b in (1, 5, INDEX.size // 2, INDEX.size - 1):
        for delta in (1, -1, 1 << 32):
            bad = INDEX.copy()
            bad[b] += delta
            fails(index=bad)
    bad = INDEX.copy()
    bad[0] = 2
    fails(index=bad)
    bad = INDEX.copy()
    bad[3] = -4
    fails(index=bad)
    fails(data=DATA[:-1])
    fails(data=np.concatenate([DATA, np.zeros(1, np.uint8)]))
    fails(count=n + 8)
    fails(count=n - 3 - 8)
    fails(index=INDEX[:-1])
    fails(data=DATA[:0])


@settings(max_examples=60, deadline=None)
@given(pos=st.integers(0, DATA.size - 1), value=st.integers(0, 255), entry=st.integers(0, INDEX.size - 1),
       shift=st.integers(-40, 40))
def test_random_damage_both_paths_agree(pos, value, entry, shift):
    """A byte overwritten anywhere (a tag word or a field) and an index entry moved:
    the kernel gives what the checked walk gives, values or the error; a moved entry is
    always an error."""
    data = DATA.copy()
    data[pos] = value
    assert _outcome(data, BITS.size, INDEX, 16, True) == _outcome(data, BITS.size, INDEX, 16, False)
    index = INDEX.copy()
    index[entry] += shift
    got = _outcome(DATA, BITS.size, index, 16, True)
    assert got == _outcome(DATA, BITS.size, index, 16, False)
    assert (got == "error") == (shift != 0)


def test_bad_arguments():
    out = np.empty(fast.unpack_room(BITS.size), np.uint32)
    call = fast_index.fast_unpack_groups_indexed_into
    with pytest.raises(ValueError, match="count"):
        call(DATA, -1, out, INDEX, 16, 10, "bounded")
    with pytest.raises(ValueError, match="every"):
        call(DATA, BITS.size, out, INDEX, 0, 10, "bounded")
    with pytest.raises(ValueError, match="uint8"):
        call(DATA.tobytes(), BITS.size, out, INDEX, 16, 10, "bounded")
    with pytest.raises(ValueError, match="index"):
        call(DATA, BITS.size, out, INDEX.astype(np.float64), 16, 10, "bounded")
    with pytest.raises(ValueError, match="needed"):
        call(DATA, BITS.size, out[:100], INDEX, 16, 10, "bounded")
    with pytest.raises(ValueError):
        call(DATA, BITS.size, out, INDEX, 16, 99, "bounded")
    with pytest.raises(ValueError, match="kernel"):
        call(DATA, BITS.size, out, INDEX, 16, 10, "bounded", kernel="gather")
    call(np.zeros(0, np.uint8), 0, np.zeros(0, np.uint32), np.zeros(0, np.int64), 16, 10, "bounded")
