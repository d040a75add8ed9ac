"""study/nic_path.py: the study's ring through the NIC's frames decodes to exactly the
codec's roundtrip (the engines add framing, never other values), and refuses bytes that
are not its frames."""

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.study.nic_path import FramesCodec


@pytest.mark.parametrize("codec", ["paper", "bounded"])
@pytest.mark.parametrize("n", [0, 8, 361, 362, 370, 5068])
def test_frames_decode_to_the_codec_roundtrip(codec, n):
    v = np.random.default_rng(n).normal(0, 1e-3, n).astype(np.float32)
    c = FramesCodec(10, codec)
    buf = c.encode(v)
    got = c.decode(buf, n)
    want = golden.roundtrip(v, 10, codec)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    if n:
        assert len(buf) < v.nbytes                 # compressed frames, not fall-backs


def test_a_one_float_frame_falls_back_raw_as_the_engine_does():
    # 4 payload bytes cannot shrink (shim + tag word): TX forwards them raw, DSCP cleared.
    v = np.random.default_rng(2).normal(0, 1e-3, 363).astype(np.float32)
    c = FramesCodec(10, "paper")
    got = c.decode(c.encode(v), v.size)
    want = golden.roundtrip(v[:362], 10, "paper")
    assert np.array_equal(got[:362].view(np.uint32), want.view(np.uint32))
    assert got[362] == v[362]


def test_incompressible_chunks_travel_raw_and_exact():
    # Values of 34-bit codes: TX falls back (DSCP cleared), RX forwards, nothing is lost.
    v = np.random.default_rng(1).normal(0, 100, 1000).astype(np.float32)
    c = FramesCodec(10, "bounded")
    got = c.decode(c.encode(v), v.size)
    assert np.array_equal(got.view(np.uint32), v.view(np.uint32))


def test_wrong_count_and_bad_arguments_are_errors():
    c = FramesCodec(10, "paper")
    buf = c.encode(np.ones(10, np.float32) * 1e-3)
    with pytest.raises(ValueError, match="expected 11"):
        c.decode(buf, 11)
    with pytest.raises(ValueError):
        FramesCodec(10, "paper", floats_per_frame=0)
    with pytest.raises(ValueError):
        FramesCodec(17, "bounded")
