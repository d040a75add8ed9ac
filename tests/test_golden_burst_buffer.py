"""golden.BurstBuffer, the ring of hw/burst_buffer.py, driven as sim/test_burst_buffer.py
drives the RTL: payloads cut into lane-aligned pieces from a random lane, a consumer
taking group after group, stalls on both sides, flushes at the end and in the middle
of a payload. The stream must come out intact, with the wire format's zero extension
past the end, ``rest`` exact once the last piece is in, and groups decoded from the
window equal to unpack_groups."""

import random

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.golden import BurstBuffer, tag_decoder
from inceptionn.golden.burst_buffer import RING_BYTES, WINDOW_BYTES, lane_pieces


def make_payloads(rng, count):
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.4:
            x = np.asarray([rng.gauss(0, 10 ** rng.uniform(-4, 1)) for _ in range(rng.randrange(0, 120))],
                           np.float32)
            codec = rng.choice(("paper", "bounded"))
            out.append(golden.encode(x, rng.randrange(1, 127 if codec == "paper" else 17), codec))
        elif kind < 0.8:
            out.append(rng.randbytes(rng.randrange(0, 300)))
        else:
            out.append(bytes(rng.randrange(0, 70)))
    return out


def run(payloads, rng, flush_rate=0.0, cut=None):
    """Feed the payloads and consume them group by group; returns what the consumer saw
    of each (cut short where it flushed early) and the number of groups read past the
    end of a payload."""
    bb = BurstBuffer()
    if cut is None:
        cut = [lane_pieces(p, rng.randrange(32), empty_last=rng.random() < 0.5) for p in payloads]
    pieces = [(k, p) for k, c in enumerate(cut) for p in c]
    delivered = [0] * len(payloads)
    seen, cur, pl, pos, pi, past_end = [], bytearray(), 0, 0, 0, 0
    steps = 0
    while pl < len(payloads):
        steps += 1
        assert steps < 100 + 10 * sum(len(p) for p in payloads) + 10 * len(pieces), "stuck"
        want = payloads[pl]
        ext = want + bytes(pos + WINDOW_BYTES + 40)       # zero extension
        if pi < len(pieces) and rng.random() < 0.7:
            k, piece = pieces[pi]
            if bb.push(*piece):
                pi += 1
                if k == pl:
                    delivered[k] += piece[2]
        if not bb.ready or rng.random() < 0.3:
            continue
        assert bb.rest == delivered[pl] - pos
        length = bb.group_length()
        if bb.last:
            assert bb.rest == len(want) - pos
            assert bb.window() == ext[pos:pos + WINDOW_BYTES]
        else:
            held = min(WINDOW_BYTES, max(0, delivered[pl] - pos))
            assert bb.window()[:held] == ext[pos:pos + held]
        assert bb.held() == (pos + length <= delivered[pl])
        if bb.last and pos >= len(want) and rng.random() < 0.5:
            flush = True
        elif pos > 0 and rng.random() < flush_rate:
            flush = True                                 # give up on the rest
        else:
            flush = False
            if bb.held() or (bb.last and rng.random() < 0.7):
                past_end += pos + length > len(want)
                assert bb.step(past_ok=bb.last) == length
                cur += want[pos:pos + length]
                pos += length
        if flush:
            bb.flush()
            seen.append(bytes(cur))
            cur, pos = bytearray(), 0
            pl += 1
            # Pieces of the flushed payload not yet offered are dropped by the buffer.
    return seen, past_end


@pytest.mark.parametrize("seed", range(6))
def test_stream_intact(seed):
    rng = random.Random(seed)
    payloads = make_payloads(rng, 30)
    seen, past_end = run(payloads, rng)
    assert seen == payloads
    assert past_end > 3


@pytest.mark.parametrize("seed", range(4))
def test_flush_mid_payload_drops_its_rest(seed):
    rng = random.Random(100 + seed)
    payloads = make_payloads(rng, 30)
    seen, _ = run(payloads, rng, flush_rate=0.05)
    for p, s in zip(payloads, seen):
        n = min(len(p), len(s))
        assert s[:n] == p[:n] and s[n:] == bytes(len(s) - n)


def test_ends_on_lane_31():
    """A tag word on the payload's last byte, on lane 31, then an empty last piece: the
    group's length comes from the zero extension (as sim/test_burst_buffer.py's
    ends_on_lane_31)."""
    rng = random.Random(31)
    payloads, cut = [], []
    for n in [1, 31, 33, 63, 65, 95, 97, 127, 129, 159, 161, 223, 255, 257] * 2:
        payloads.append(bytes(n - 1) + b"\xff")
        cut.append(lane_pieces(payloads[-1], -n % 32, empty_last=bool(n % 3)))
        assert cut[-1][-1][2] == 0 or not n % 3
    seen, past_end = run(payloads, rng, cut=cut)
    assert seen == payloads
    assert past_end >= len(payloads)


def test_groups_from_the_window_decode_like_unpack():
    """A consumer that pushes while there is room and steps when the group is held never
    gets stuck (the 128-byte ring holds a 34-byte group and a beat), and decoding each
    group from the window gives unpack_groups' values, from any first lane."""
    rng = np.random.default_rng(5)
    for lane in range(0, 32, 3):
        for k, codec in ((2, "paper"), (6, "bounded"), (10, "paper"), (16, "bounded"), (20, "paper")):
            x = (rng.normal(0, 1, 300) * np.exp(rng.uniform(-12, 3, 300))).astype(np.float32)
            buf = golden.encode(x, k, codec)
            pieces, bb, out, fi = lane_pieces(buf, lane), BurstBuffer(), [], 0
            while len(out) < x.size:
                while fi < len(pieces) and bb.push(*pieces[fi]):
                    fi += 1
                assert bb.held() or bb.last, "stuck short of a group"
                win = bb.window()
                widths, offsets, length = tag_decoder(int.from_bytes(win[:2], "little"))
                tags = [[0, 1, 2, None, 3][w] for w in widths]
                stored = [int.from_bytes(win[o:o + w], "little") for o, w in zip(offsets, widths)]
                out += golden.decompression_block(np.array(tags), np.array(stored, np.uint32),
                                                  k, codec).tolist()
                assert bb.step() == length
            assert out[:x.size] == golden.unpack_groups(buf, x.size, k, codec)[0].tolist()
            assert bb.rest == 0 and fi == len(pieces) and bb.last


def test_room_and_contract():
    bb = BurstBuffer()
    assert not bb.ready and bb.rest == 0 and bb.window() == bytes(WINDOW_BYTES)
    data = bytes(range(32))
    assert bb.push(data, 0, 32, False)
    for _ in range(RING_BYTES // 32 - 1):
        assert bb.push(data, 0, 32, False)
    assert not bb.has_room() and not bb.push(data, 0, 32, False)   # the ring is full
    with pytest.raises(ValueError, match="lane 31"):
        bb.push(data, 0, 5, False)
    with pytest.raises(ValueError, match="first \\+ count"):
        bb.push(data, 4, 30, True)
    bb.step()                                   # tag word 0x0100: one 1-byte field, 3 bytes
    assert bb.rest == RING_BYTES - 3 and not bb.has_room()
    while bb.rest > RING_BYTES - 32:
        bb.step()
    assert bb.has_room()                        # the read position left slot 0
    with pytest.raises(ValueError, match="goes on at lane 0"):
        bb.push(data, 3, 29, False)
    assert bb.push(data, 0, 3, True) and bb.last and not bb.has_room()
    bb.flush()
    assert not bb.ready and not bb.last and bb.window() == bytes(WINDOW_BYTES)
    with pytest.raises(ValueError, match="not in"):
        bb.step()
    # A flush before the last piece drops the payload's pieces up to its last.
    bb.push(data, 0, 32, False)
    bb.flush()
    assert bb.push(data, 0, 32, False) and bb.push(data, 0, 1, True) and not bb.ready
    assert bb.push(data, 8, 24, False) and bb.ready and bb.rest == 24
