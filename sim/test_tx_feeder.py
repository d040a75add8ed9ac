"""TX feeder: random payloads (zero length, tails of 1..3 bytes riding in the last group
or following it on their own, full last groups, every group size 2..34) compressed by
the golden model, fed as the CompressionUnit's groups and decoded side port, the
dispatcher's shim and the group former's tail entries, each with its own idle pattern,
under every idle x backpressure pattern on the AlignmentUnit input and ``clen`` (a
2-entry FIFO whose reader is backpressured; its writes must find room). Per frame, in
order, the vectors must be [P mod 32 placeholders + shim] as a fill vector (every P mod
32), the groups as they came, and a separate tail; the AlignmentUnit's golden model
must then make the output frame's beats from them: the rotated shim's bytes below P mod
32 and the golden compressed payload C from there. ``clen`` must hold |C| and a
separate tail's word sum, ``dsum`` the one's-complement sum of the decoded payload
(without a separate tail). A hand-worked frame checks literal values."""

import itertools
import random
import struct

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import (PAUSE_MODES, StreamSource, Streams, frame_to_beats, guard_strobe,
                                 pause_generator, port_sink, port_source, start)
from inceptionn.sim.payloads import pack, unpack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "tx_feeder"
FRAMES = 80
CLEN_DEPTH = 2
VEC_BYTES = 34


def _design():
    from inceptionn.hw.tx.feeder import Feeder
    return Feeder()


def _value(rng, raw):
    """A gradient-like float32 (zero, small or not), or with probability ``raw`` one of
    magnitude >= 2 (bit 30 set: the raw band, stored as 4 bytes)."""
    if rng.random() < raw:
        return (rng.getrandbits(32) | 1 << 30).to_bytes(4, "little")
    kind = rng.randrange(4)
    return b"\0\0\0\0" if kind == 0 else struct.pack("<f", rng.gauss(0, (1e-4, 1e-2, 1.0)[kind - 1]))


def _shim_rot(shim, plane):
    """The shim rotated by P mod 4: byte j of the word is shim byte (j - plane) mod 4."""
    return int.from_bytes(bytes(shim[(j - plane) % 4] for j in range(4)), "little")


def _frame(rng, length, plane, k, raw=None):
    """One frame as the stages before the feeder hand it over, and what must come out."""
    import numpy as np
    from inceptionn.golden.compression_unit import compression_unit
    from inceptionn.golden.payload import compress_payload_with_decoded, make_shim
    raw = rng.choice((0, 0.1, 0.3, 0.5, 0.8, 1)) if raw is None else raw
    payload = b"".join(_value(rng, raw) for _ in range(length // 4)) + rng.randbytes(length % 4)
    n, r = length // 4, length % 4
    tail = payload[4 * n:]
    if length == 0:
        # The realigner's empty beat: the group former makes it one zero value.
        comp, dec = make_shim(0, k) + compression_unit(np.zeros(1, np.uint32), k), b"\0" * 4
    else:
        comp, dec = compress_payload_with_decoded(payload, k)
    # The group former: a group per 32-byte beat; a last beat of fewer than 4 bytes is
    # absorbed (its tail separate), else its tail rides in its group.
    nb = length - 32 * (max(1, -(-length // 32)) - 1)
    sep = int(length >= 32 and nb < 4 and r > 0)
    vals = np.frombuffer(payload[:4 * n], "<u4") if n else np.zeros(1, np.uint32)
    groups, d = [], []
    ng = -(-len(vals) // 8)
    for g in range(ng):
        last = g == ng - 1
        gb = compression_unit(vals[8 * g:8 * g + 8], k)
        groups.append((gb + (tail if last and not sep else b""), last))
        d.append(dec[32 * g:32 * g + 32])       # its values, and a riding tail
    shim = make_shim(length, k)
    vecs = [(1, plane + 4, 0, shim)]
    vecs += [(0, len(gb), int(last and not sep), gb) for gb, last in groups]
    if sep:
        vecs.append((0, r, 1, tail))
    tpad = (tail if sep else b"").ljust(4, b"\0")
    tsum = int.from_bytes(tpad[:2], "big") + int.from_bytes(tpad[2:], "big")
    return {"length": length, "plane": plane, "k": k, "comp": comp, "groups": groups,
            "d": d, "dsum_bytes": dec[:len(dec) - (r if sep else 0)],
            "shim": {"plane": plane, "shim_rot": _shim_rot(shim, plane)},
            "tail": {"tail": int.from_bytes(tail if sep else rng.randbytes(3), "little"),
                     "r": r, "sep": sep},
            "vecs": vecs, "clen": {"clen": len(comp), "tsum": tsum}}


def _frames(seed):
    rng = random.Random(seed)
    planes = list(range(32))
    rng.shuffle(planes)
    # (L, share of raw values): empty; separate tails of 1..3 bytes; a full last group;
    # riding tails on 1 value; all-raw groups of 33 (7 values and 3 tail bytes) and 34.
    fixed = [(0, 0), (33, 0), (66, 0.2), (99, 1), (32, 0), (256, 0.2), (4, 0), (5, 0),
             (6, 0), (7, 0), (63, 1), (64, 1)]
    rand = [(rng.choice((32 * rng.randint(1, 20) + rng.randint(1, 3), rng.randint(4, 700),
                         32 * rng.randint(1, 10))), None) for _ in range(FRAMES - len(fixed))]
    kinds = fixed + rand
    rng.shuffle(kinds)
    return [_frame(rng, n, planes[i] if i < 32 else rng.randrange(32), rng.randint(1, 126), raw)
            for i, (n, raw) in enumerate(kinds)]


def _d_beats(f, rng):
    """The CompressionUnit's side port, per group: (first, last, data, mask); bytes past
    D, and some zero bytes of D, masked out with random data under them."""
    out = []
    for g, db in enumerate(f["d"]):
        data, mask = bytearray(rng.randbytes(32)), 0
        for j, b in enumerate(db):
            if b or rng.random() < 0.5:
                data[j] = b
                mask |= 1 << j
        out.append((int(g == 0), int(g == len(f["d"]) - 1), int.from_bytes(data, "little"),
                    mask))
    return out


async def _side_ports(dut, d_beats, d_idle, bp_c, clens, dsums):
    """The ports beside the streams, from the clock after the inputs start: the
    CompressionUnit's decoded side port (valid only, no ready: every beat offered is
    taken), ``clen`` (a write strobe into a 2-entry FIFO model, ready while it has room,
    its reader backpressured) and ``dsum`` (ready tied high)."""
    clenq = []

    def put_d(beat):
        first, last, data, mask = beat
        dut.decoded__d_first.value, dut.decoded__d_last.value = first, last
        dut.decoded__d_data.value, dut.decoded__d_mask.value = data, mask
    dec = StreamSource(dut.clk, dut.decoded__d_valid, None, put_d, pause=d_idle)
    dec.load(d_beats)
    full = (len(clenq) >= CLEN_DEPTH for _ in itertools.count())
    clen = port_sink(dut, "clen", pause=full, on_item=clenq.append)
    dsum = port_sink(dut, "dsum", on_item=dsums.append)

    def check():
        # the FIFO's reader; clen is a write strobe: valid only with room
        if clenq and not next(bp_c):
            clens.append(clenq.pop(0))
        assert not dut.clen__valid.value or dut.clen__ready.value, "clen written into a full FIFO"
    await RisingEdge(dut.clk)
    await Streams(dut.clk, dec, clen, dsum, check=check).run()


async def _run(dut, frames, idle, backpressure, seed):
    """Returns (vectors, clen entries, dsum values) as they came out."""
    from inceptionn.hw.alignment_unit import ByteVector
    from inceptionn.hw.tx.layouts import FedGroup, ShimInfo, TailInfo
    rng = random.Random(500 + seed)
    groups = [pack(FedGroup, {"data": int.from_bytes(gb + rng.randbytes(VEC_BYTES - len(gb)),
                                                      "little"),
                              "length": len(gb), "last": int(last)})
              for f in frames for gb, last in f["groups"]]
    inputs = [("groups", groups, 10), ("shim", [pack(ShimInfo, f["shim"]) for f in frames], 20),
              ("tail", [pack(TailInfo, f["tail"]) for f in frames], 30)]
    d_beats = [b for f in frames for b in _d_beats(f, rng)]
    n_vecs = sum(len(f["vecs"]) for f in frames)
    vecs, clens, dsums = [], [], []
    sink = port_sink(dut, "o", pause=pause_generator(backpressure, 50 + seed),
                     on_item=lambda p: vecs.append(unpack(ByteVector, p)))
    tasks = [cocotb.start_soon(sink.run()),
             cocotb.start_soon(_side_ports(dut, d_beats, pause_generator(idle, 40 + seed),
                                           pause_generator(backpressure, 60 + seed), clens, dsums))]
    # shim and tail are FIFO read strobes: ready only with valid.
    tasks += [cocotb.start_soon(guard_strobe(dut.clk, getattr(dut, f"{n}__valid"),
                                             getattr(dut, f"{n}__ready"), n))
              for n in ("shim", "tail")]
    srcs = [cocotb.start_soon(port_source(dut, n, pause=pause_generator(idle, k + seed)).send(items))
            for n, items, k in inputs]
    cycles = 0
    while len(vecs) < n_vecs or len(clens) < len(frames) or len(dsums) < len(frames):
        await RisingEdge(dut.clk)
        cycles += 1
        assert cycles < 60 * n_vecs + 200, (
            f"stuck: {len(vecs)} of {n_vecs} vectors, {len(clens)} clen, {len(dsums)} dsum")
    tasks[0].cancel()
    for _ in range(30):
        await RisingEdge(dut.clk)
        dut.o__ready.value = 1
        await ReadOnly()
        assert not (dut.o__valid.value or dut.clen__valid.value or dut.dsum__valid.value), \
            "an extra output came out"
    assert all(t.done() for t in srcs), "inputs left over"
    for t in tasks:
        t.cancel()
    return vecs, clens, dsums


def _check(frames, vecs, clens, dsums):
    from inceptionn.golden.alignment_unit import alignment_unit
    from inceptionn.golden.checksum import ones_sum
    from inceptionn.hw.tx.layouts import CLenInfo
    it = iter(vecs)
    for n, f in enumerate(frames):
        got = [next(it) for _ in f["vecs"]]
        where = f"frame {n} (L {f['length']}, P mod 32 {f['plane']})"
        parts = []
        for i, (g, (fill, length, last, data)) in enumerate(zip(got, f["vecs"])):
            gd = g["data"].to_bytes(VEC_BYTES, "little")
            assert (g["fill"], g["length"], g["last"]) == (fill, length, last), (
                f"{where} vector {i}: fill {g['fill']} length {g['length']} last {g['last']}, "
                f"want {fill} {length} {last}")
            if fill:
                parts.append(bytes(gd[j % 4] for j in range(length)))
            else:
                assert gd[:length] == data, f"{where} vector {i}: {gd[:length].hex()}, want {data.hex()}"
                parts.append(gd[:length])
        shim = f["comp"][:4]
        want = bytes(shim[(j - f["plane"]) % 4] for j in range(f["plane"])) + f["comp"]
        assert alignment_unit(parts) == [(d.to_bytes(32, "little"), keep, last)
                                         for d, keep, last, _ in frame_to_beats(want)], \
            f"{where}: aligned beats"
        c = unpack(CLenInfo, clens[n])
        assert c == f["clen"], f"{where}: clen {c}, want {f['clen']}"
        assert dsums[n] == ones_sum(f["dsum_bytes"]), (
            f"{where}: dsum {dsums[n]:#06x}, want {ones_sum(f['dsum_bytes']):#06x}")


@cocotb.test()
async def hand_worked(dut):
    """L = 35, k = 20, P mod 32 = 6: shim 00 23 C5 14, rotated by 2 to C5 14 00 23; one
    group of 8 values (here 5 literal bytes 02 01 AA BB CC), then the 3 tail bytes 12 34
    56 on their own. Vectors: fill (10 bytes), the group (5, not last), the tail (3,
    last); clen 4 + 5 + 3 = 12, tsum 0x1234 + 0x5600 = 0x6834; D (32 bytes 0x01 0x00
    repeated, as the side port gives it) sums to 16 x 0x0100 = 0x1000."""
    await start(dut, {"groups__valid": 0, "shim__valid": 0, "tail__valid": 0, "decoded__d_valid": 0,
                      "o__ready": 1, "clen__ready": 1, "dsum__ready": 1})
    gb = bytes([0x02, 0x01, 0xAA, 0xBB, 0xCC])
    f = {"groups": [(gb, True)], "d": [bytes([1, 0] * 16)],
         "shim": {"plane": 6, "shim_rot": 0x230014C5},
         "tail": {"tail": 0x563412, "r": 3, "sep": 1}}
    vecs, clens, dsums = await _run(dut, [dict(f, vecs=[0, 0, 0])], "none", "none", 0)
    assert [(v["fill"], v["length"], v["last"]) for v in vecs] == [(1, 10, 0), (0, 5, 0), (0, 3, 1)]
    assert vecs[0]["data"] & 0xFFFFFFFF == 0x230014C5
    assert vecs[1]["data"].to_bytes(VEC_BYTES, "little")[:5] == gb
    assert vecs[2]["data"] & 0xFFFFFF == 0x563412
    assert clens == [12 | 0x6834 << 17] and dsums == [0x1000]


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def frames(dut, idle, backpressure):
    await start(dut, {"groups__valid": 0, "shim__valid": 0, "tail__valid": 0, "decoded__d_valid": 0,
                      "o__ready": 0, "clen__ready": 0, "dsum__ready": 1})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    fr = _frames(seed)
    if seed == 0:       # the nine patterns' frames hold groups of every size
        sizes = {len(gb) for s in range(9) for f in _frames(s) for gb, _ in f["groups"]}
        assert sizes == set(range(2, VEC_BYTES + 1)), sorted(set(range(2, 35)) - sizes)
    vecs, clens, dsums = await _run(dut, fr, idle, backpressure, seed)
    _check(fr, vecs, clens, dsums)


def test_tx_feeder():
    harness.run(_design, DUT, "inceptionn.sim.test_tx_feeder")
