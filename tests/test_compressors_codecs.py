"""Value codecs of the compressors: INCEPTIONN bit-exact through the golden model,
truncation, and the error-bounded variant's bound over every exponent."""

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers.collectives.compressors import EBCodec, TruncCodec, inceptionn, inceptionn_eb, make


def every_exponent(rng, per=48):
    """Both signs, all 256 exponents, random mantissas (plus the all-0 and all-1 ones)."""
    e = np.repeat(np.arange(256, dtype=np.uint32), per)
    m = rng.integers(0, 1 << 23, e.size, dtype=np.uint32)
    m[::per], m[1::per] = 0, (1 << 23) - 1
    s = rng.integers(0, 2, e.size, dtype=np.uint32)
    return ((s << 31) | (e << 23) | m).view(np.float32)


@pytest.mark.parametrize("k", [6, 8, 10])
def test_inceptionn_is_the_golden_codec(k):
    x = np.random.default_rng(k).normal(0, 1e-2, 999).astype(np.float32)
    comp = inceptionn(k)
    state = comp.init(x.size)
    payload, state = comp.compress(x, state)
    assert payload.values == golden.encode(x, k, "paper")
    assert payload.nbytes == len(golden.pack_groups(x.view(np.uint32), k))
    out = comp.decompress(payload, x.size, state)
    assert (out.view(np.uint32) == golden.roundtrip(x, k, "paper").view(np.uint32)).all()


@pytest.mark.parametrize("k", [1, 6, 10, 16])
def test_inceptionn_eb_is_the_golden_bounded_codec(k):
    """One implementation: the compressor's bytes are wire version 2's groups (golden model
    and fast path), and its values are what a version-2 receiver restores."""
    from inceptionn.golden import fast
    x = every_exponent(np.random.default_rng(k), 8)
    comp = inceptionn_eb(k)
    state = comp.init(x.size)
    payload, state = comp.compress(x, state)
    assert payload.values == golden.encode(x, k, "bounded") == fast.fast_pack_groups(
        x.view(np.uint32), k, "bounded")
    out = comp.decompress(payload, x.size, state)
    wire = golden.compress_payload(x.tobytes(), k, "bounded")
    assert wire[2:4] == bytes([0xC6, k]) and wire[4:] == payload.values
    assert out.tobytes() == golden.decompress_payload(wire)[0]


@pytest.mark.parametrize("bits", [16, 22, 24])
def test_truncation_keeps_the_top_bits(bits):
    x = every_exponent(np.random.default_rng(bits), 4)
    codec = TruncCodec(bits)
    buf = codec.encode(x)
    assert len(buf) == -(-x.size * (32 - bits) // 8)
    assert (codec.decode(buf, x.size).view(np.uint32) == x.view(np.uint32) >> bits << bits).all()
    if bits == 16:   # 16 kept bits: exactly the two high bytes of each value, big endian
        assert buf == (x.view(np.uint32) >> 16).astype(">u2").tobytes()


@pytest.mark.parametrize("k", list(range(1, 17)))
def test_eb_error_bound_over_all_exponents(k):
    x = every_exponent(np.random.default_rng(100 + k))
    codec = EBCodec(k)
    buf = codec.encode(x)
    y = codec.decode(buf, x.size)
    fin = np.isfinite(x)
    err = np.abs(y[fin].astype(np.float64) - x[fin].astype(np.float64))
    assert err.max() <= 2.0 ** -k
    if k <= 14:
        assert err.max() < 2.0 ** -k
        # the lossy bands: half the bound (middle of the step)
        tag = golden.compression_block(x.view(np.uint32), k)[0][fin]
        assert err[(tag == 1) | (tag == 2)].max() <= 2.0 ** -(k + 1)
    # Inf and NaN travel raw, bit for bit
    assert (y.view(np.uint32)[~fin] == x.view(np.uint32)[~fin]).all()


@pytest.mark.parametrize("k", [6, 8, 10])
def test_eb_costs_what_the_paper_costs(k):
    rng = np.random.default_rng(k)
    for x in (every_exponent(rng), rng.normal(0, 1e-3, 4099).astype(np.float32)):
        buf = EBCodec(k).encode(x)
        assert len(buf) == len(golden.encode(x, k))
        y = EBCodec(k).decode(buf, x.size)
        assert EBCodec(k).encode(y) == buf   # idempotent: ring hops re-code for free
        tags_x = golden.compression_block(x.view(np.uint32), k)[0]
        tags_y = golden.compression_block(y.view(np.uint32), k)[0]
        assert (tags_x == tags_y).all()


def test_eb_fixes_the_8bit_band_flaw():
    x = np.random.default_rng(0).normal(0, 1e-3, 10_000).astype(np.float32)
    paper = golden.roundtrip(x, 10, "paper")
    comp = inceptionn_eb(10)
    state = comp.init(x.size)
    payload, state = comp.compress(x, state)
    eb = comp.decompress(payload, x.size, state)
    assert payload.nbytes == len(golden.encode(x, 10))
    assert np.count_nonzero(paper) == 0               # the documented flaw
    assert np.abs(eb - x).max() < 2.0 ** -10 < np.abs(paper - x).max()


def test_eb_refuses_unbounded_k_and_bad_streams():
    with pytest.raises(ValueError):
        EBCodec(17)
    buf = EBCodec(10).encode(np.ones(9, np.float32))
    with pytest.raises(ValueError):
        EBCodec(10).decode(buf[:-1], 9)
    with pytest.raises(ValueError):
        EBCodec(10).decode(buf + b"\0", 9)


def test_terngrad_wire():
    """2-bit codes, value i in bits [2(i%4)+1:2(i%4)]: 00 = 0, 01 = +1, 10 = -1; then the
    float32 scaler of each layer."""
    x = np.array([0, 2, -2, 0, 2], np.float32)
    comp = make("terngrad", clip=None, layers=[3, 2])
    payload, state = comp.compress(x, comp.init(5))
    assert payload.values == bytes([0b00_10_01_00, 0b01])
    assert payload.scale == np.array([2, 2], "<f4").tobytes() and payload.nbytes == 10
    assert (comp.decompress(payload, 5, state) == x).all()


def test_a_codec_given_to_the_inceptionn_compressors_must_have_their_k():
    from inceptionn.drivers.collectives.compressors.inceptionn import GoldenCodec
    from inceptionn.drivers.collectives.compressors.inceptionn_eb import EBCodec
    assert make("inceptionn", k=8, codec=GoldenCodec(8)).codec.k == 8
    with pytest.raises(ValueError, match="2\\^-8"):
        make("inceptionn", k=10, codec=GoldenCodec(8))
    with pytest.raises(ValueError, match="2\\^-6"):
        make("inceptionn_eb", k=10, codec=EBCodec(6))


def test_the_hooks_inceptionn_is_made_where_every_method_is():
    """The DDP hook builds INCEPTIONN through compressors.make, as every other method:
    its codec by name and bound, the ring's codec recording the loss where the ring
    feeds the memory."""
    from inceptionn.ddp_hook import IncState
    from inceptionn.drivers.collectives.codecs import ScaledCodec, WireCodec
    from inceptionn.drivers.collectives.compressors import Inceptionn
    from inceptionn.drivers.collectives.memory import LossRecorder

    default = IncState()
    comp = default.compressor()
    assert isinstance(comp, Inceptionn) and comp.ring_native and "nic" in comp.wires
    assert isinstance(comp.codec, ScaledCodec) and comp.codec.k == 10
    assert isinstance(default.worker.codec, LossRecorder) and default.worker.memory is not None
    paper = IncState(codec="paper", error_bound=2 ** -8)
    assert isinstance(paper.compressor().codec, WireCodec)
    assert (paper.compressor().codec.name, paper.compressor().codec.k) == ("paper", 8)
    assert paper.worker.codec is not None and paper.worker.memory is None
    assert make("inceptionn", k=10, codec="bounded", bound="scaled").codec.name == \
        comp.codec.name
    with pytest.raises(ValueError, match="bounded codec"):
        make("inceptionn", k=10, codec="paper", bound="scaled")


def test_the_hook_reads_error_feedback_from_what_a_compressor_declares(monkeypatch):
    """No switch on method names: a new compressor gets the hook's error feedback as its
    option when it lists "feedback" in `needs`, always when it keeps a residual as part
    of its method (`feedback = True`), and not at all otherwise."""
    from inceptionn.ddp_hook import IncState
    from inceptionn.drivers.collectives import compressors, hook_options
    from inceptionn.drivers.collectives.compressors import Compressor

    class Optional(Compressor):
        needs = ("feedback",)

        def __init__(self, feedback=False):
            self.feedback = feedback

    class Kept(Compressor):
        feedback = True

    class Without(Compressor):
        pass

    new = {"optional": Optional, "kept": Kept, "without": Without}
    monkeypatch.setattr(compressors, "METHODS", {**compressors.METHODS, **new})
    monkeypatch.setattr(hook_options, "METHODS", (*hook_options.METHODS, *new))
    on = IncState(method="optional", error_feedback=True)
    assert on.error_feedback and on.method_kw == {"feedback": True}
    assert isinstance(on.compressor(), Optional) and on.compressor().feedback
    off = IncState(method="optional")
    assert not off.error_feedback and off.method_kw == {"feedback": False}
    assert IncState(method="kept").error_feedback
    with pytest.raises(ValueError, match="keeps its residual"):
        IncState(method="kept", error_feedback=False)
    assert not IncState(method="without").error_feedback
    with pytest.raises(ValueError, match="error_feedback needs"):
        IncState(method="without", error_feedback=True)
