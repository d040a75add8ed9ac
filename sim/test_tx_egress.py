"""TX egress: random descriptors (drop, pass with or without patches, compressed with
the header patches), under every idle x backpressure pattern. The two rings are memories
of random beats read with one clock of latency; each frame's beats are written into them
where its descriptor says before it is offered (header and payload at ring offsets that
wrap, the compressed payload on the output frame's lanes, random placeholder bytes below
P mod 32 and past the frame's end). Per frame, in order, the output beats must be the
frame worked out here: the orig ring's bytes below P and the comp ring's from P on
(compressed; every P mod 32 from 0 to 31, beats 1..4), or the stored frame (pass), with
the enabled patches' words written at their offsets, keep / last / user from the length
and the descriptor, zeros past keep; a dropped frame sends nothing. Each frame releases
its orig entries, and its comp entries when it has them, in order; ``frames_out``
counts the frames sent. A hand-worked frame checks the lanes directly."""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import (PAUSE_MODES, frame_to_beats, guard_strobe, pause_generator, port_sink,
                                 port_source, start)
from inceptionn.sim.payloads import pack, unpack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "tx_egress"
AW = 10
DEPTH = 1 << AW
FRAMES = 80
PATCH_BITS = 24


def _design():
    from inceptionn.hw.tx.egress import Egress
    return Egress(AW)


def _patches(l3, ihl, udp, p, n, rng):
    """Random enabled patches where the finisher puts them (ToS l3, total length l3 + 2,
    IP checksum l3 + 10, UDP length l4 + 4, L4 checksum l4 + 6 / l4 + 16), inside the
    first min(P, n) bytes: [(offset, value bytes) or None] x 5."""
    l4 = l3 + 4 * ihl
    offs = [l3, l3 + 2, l3 + 10, l4 + 4 if udp else None, l4 + (6 if udp else 16)]
    out = []
    for off in offs:
        on = off is not None and off + 2 <= min(p, n) and rng.random() < 0.7
        out.append((off, rng.randbytes(2)) if on else None)
    return out


def _pack_patches(patches):
    v = 0
    for idx, p in enumerate(patches):
        if p is not None:
            off, val = p
            v |= (1 | (off // 32) << 1 | (off % 32 // 2) << 4
                  | int.from_bytes(val, "little") << 8) << (PATCH_BITS * idx)
    return v


def _frame(rng, mode, orig_start, comp_start, p=None, clen=None, frame_len=None):
    """One frame: its descriptor fields, the beats to write into each ring, and the
    output bytes (None: dropped)."""
    l3 = rng.choice((14, 18))
    ihl = rng.randint(5, 8)
    udp = rng.getrandbits(1)
    if p is None:
        p = rng.randint(32, 138)
    if mode == "comp":
        clen = clen if clen is not None else rng.choice((rng.randint(4, 40), rng.randint(4, 400)))
        stored = (p + 31) // 32 + rng.randint(0, 3)     # the header and more
        frame = rng.randbytes(32 * stored)
        out = bytearray(frame[:p] + rng.randbytes(clen))
        # The comp ring holds the output frame's beats pb.., placeholders below P.
        cbytes = rng.randbytes(p % 32) + bytes(out[p:])
        comp = [int.from_bytes(cbytes[o:o + 32].ljust(32, b"\xee"), "little")
                for o in range(0, len(cbytes), 32)]
    else:
        n = frame_len if frame_len is not None else rng.choice(
            (rng.randint(1, 32), rng.randint(33, 200), rng.randint(60, 1500)))
        stored = (n + 31) // 32
        frame = rng.randbytes(32 * stored)
        out = bytearray(frame[:n])
        comp = []
    patches = _patches(l3, ihl, udp, p if mode == "comp" else 9999, len(out), rng)
    if mode == "pass" and rng.random() < 0.3:
        patches = [None] * 5                        # bypassed: no patch
    for pt in patches:
        if pt is not None:
            out[pt[0]:pt[0] + 2] = pt[1]
    user = int(mode == "pass" and rng.random() < 0.2)    # the finisher's rule
    has_comp = int(mode == "comp" or (mode != "drop" and rng.random() < 0.3))
    desc = {"mode": {"drop": 0, "pass": 1, "comp": 2}[mode], "user": user,
            "orig_start": orig_start, "orig_next": (orig_start + stored) % (2 * DEPTH),
            "has_comp": has_comp, "comp_start": comp_start,
            "comp_next": (comp_start + len(comp) + (mode != "comp") * rng.randint(1, 9))
            % (2 * DEPTH),
            "nbeats": (len(out) + 31) // 32, "last_bytes": (len(out) - 1) % 32 + 1,
            "pb": p // 32, "plane": p % 32, "patches": _pack_patches(patches)}
    if mode == "drop":
        desc["nbeats"] = rng.randint(1, 300)
        desc["last_bytes"] = rng.randint(1, 32)
        out = None
    orig = [int.from_bytes(frame[o:o + 32], "little") for o in range(0, len(frame), 32)]
    return {"desc": desc, "orig": orig, "comp": comp, "out": out}


def _frames(seed):
    """Every P mod 32 once in a compressed frame (beat 1..4), the rest random; the rings
    filled in order from random pointers (with their wrap bit), as the writers do."""
    rng = random.Random(seed)
    kinds = [("comp", plane) for plane in range(32)]
    kinds += [(rng.choice(("drop", "pass", "pass", "comp")), None) for _ in range(FRAMES - 32)]
    rng.shuffle(kinds)
    out = []
    op, cp = rng.randrange(2 * DEPTH), rng.randrange(2 * DEPTH)
    for mode, plane in kinds:
        p = None if plane is None else 32 * rng.randint(1, (138 - plane) // 32) + plane
        f = _frame(rng, mode, op, cp, p=p)
        op = f["desc"]["orig_next"]
        cp = f["desc"]["comp_next"] if f["desc"]["has_comp"] else cp
        out.append(f)
    return out


class _Store:
    """A FrameStore's read side: one clock of latency, data held while r_en is low."""

    def __init__(self, dut, name, rng):
        self.port = name
        self.mem = [rng.getrandbits(256) for _ in range(DEPTH)]
        self.r_data = getattr(dut, f"{name}__r_data")
        self.r_en = getattr(dut, f"{name}__r_en")
        self.r_addr = getattr(dut, f"{name}__r_addr")
        self.rel_en = getattr(dut, f"{name}__rel_en")
        self.rel = getattr(dut, f"{name}__rel")
        self.pending = None
        self.released = []

    def write(self, start, beats):
        for i, b in enumerate(beats):
            self.mem[(start + i) % DEPTH] = b

    def clock(self):
        """Right after a rising edge: the read issued in the clock before."""
        if self.pending is not None:
            self.r_data.value = self.mem[self.pending]
            self.pending = None

    def sample(self):
        """In ReadOnly: a read issued in this clock, a release."""
        if self.r_en.value:
            self.pending = int(self.r_addr.value)
        if self.rel_en.value:
            self.released.append(int(self.rel.value))


def _split(beat):
    from inceptionn.hw.axis import AxisBeat
    b = unpack(AxisBeat, beat)
    return b["data"], b["keep"], b["last"], b["user"]


async def _stores(dut, stores):
    """The rings' read sides, clock by clock."""
    while True:
        await RisingEdge(dut.clk)
        for s in stores.values():
            s.clock()
        await ReadOnly()
        for s in stores.values():
            s.sample()


async def _run(dut, frames, idle, backpressure, seed):
    """Offers the frames' descriptors (ring contents written as each is offered) and
    collects output beats; returns (frames as beat lists, orig releases, comp releases)."""
    from inceptionn.hw.tx.layouts import Desc
    rng = random.Random(1000 + seed)
    stores = {s: _Store(dut, s, rng) for s in ("orig", "comp")}
    want_out = sum(f["out"] is not None for f in frames)

    def desc(f):
        # A descriptor is offered once its frame is in the rings (rewritten, unchanged,
        # on each clock it waits).
        stores["orig"].write(f["desc"]["orig_start"], f["orig"])
        stores["comp"].write(f["desc"]["comp_start"], f["comp"])
        return pack(Desc, f["desc"])

    got, cur = [], []

    def beat(p):
        cur.append(_split(p))
        if cur[-1][2]:
            got.append(list(cur))
            cur.clear()

    sink = port_sink(dut, "o", pause=pause_generator(backpressure, 20 + seed), on_item=beat)
    src = port_source(dut, "desc", pause=pause_generator(idle, 10 + seed))
    tasks = [cocotb.start_soon(_stores(dut, stores)), cocotb.start_soon(sink.run()),
             cocotb.start_soon(guard_strobe(dut.clk, dut.desc__valid, dut.desc__ready, "desc")),
             cocotb.start_soon(src.send([lambda f=f: desc(f) for f in frames]))]
    cycles = 0
    while len(got) < want_out or not tasks[-1].done():
        await RisingEdge(dut.clk)
        cycles += 1
        assert cycles < 400 * len(frames) + 200, f"stuck: {len(got)} of {want_out} frames"
    tasks[1].cancel()
    for _ in range(20):
        await RisingEdge(dut.clk)
        dut.o__ready.value = 1
        await ReadOnly()
        assert not dut.o__valid.value, "an extra beat came out"
    for t in tasks:
        t.cancel()
    assert int(dut.frames_out.value) == want_out, f"frames_out {int(dut.frames_out.value)}"
    return got, stores["orig"].released, stores["comp"].released


def _check(frames, got, rel_orig, rel_comp):
    sent = [f for f in frames if f["out"] is not None]
    assert len(got) == len(sent), f"{len(got)} frames out, want {len(sent)}"
    for n, (f, beats) in enumerate(zip(sent, got)):
        want = frame_to_beats(bytes(f["out"]), f["desc"]["user"])
        assert len(beats) == len(want), f"frame {n}: {len(beats)} beats, want {len(want)}"
        for b, (g, w) in enumerate(zip(beats, want)):
            assert g == w, (f"frame {n} (mode {f['desc']['mode']}, P {f['desc']['pb'] * 32 + f['desc']['plane']}) "
                            f"beat {b}: got {g[0]:064x} keep {g[1]:#x} last {g[2]} user {g[3]}, "
                            f"want {w[0]:064x} keep {w[1]:#x} last {w[2]} user {w[3]}")
    assert rel_orig == [f["desc"]["orig_next"] for f in frames], "orig releases"
    assert rel_comp == [f["desc"]["comp_next"] for f in frames if f["desc"]["has_comp"]], \
        "comp releases"


@cocotb.test()
async def hand_worked(dut):
    """P = 42 (no VLAN, IHL 5, UDP), |C| = 30: 72 bytes in 3 beats, the last of 8 bytes.
    Beat 0 is orig bytes 0x11 with the total length 0x0048 on lanes 16-17 and the IP
    checksum 0xBEEF on 24-25; beat 1 is orig bytes 0x22 on lanes 0-9 with the UDP length
    0x0026 on lanes 6-7, then the comp ring's first beat (0xC0) from lane 10; beat 2 is
    the comp ring's second beat (0xC1) on lanes 0-7, zeros above. The orig frame starts
    at ring entry 1023 (it wraps), the comp payload at 511."""
    await start(dut, {"desc__valid": 0, "o__ready": 1})
    f = {"desc": {"mode": 2, "user": 0, "orig_start": 1023, "orig_next": 1026, "has_comp": 1,
                  "comp_start": 511, "comp_next": 513, "nbeats": 3, "last_bytes": 8,
                  "pb": 1, "plane": 10,
                  "patches": _pack_patches([None, (16, b"\x00\x48"), (24, b"\xbe\xef"),
                                            (38, b"\x00\x26"), None])},
         "orig": [int.from_bytes(bytes([0x11 * (i + 1)] * 32), "little") for i in range(3)],
         "comp": [int.from_bytes(bytes([0xC0 + i] * 32), "little") for i in range(2)],
         "out": b""}
    got, rel_o, rel_c = await _run(dut, [f], "none", "none", 0)
    b0 = bytearray([0x11] * 32)
    b0[16:18] = b"\x00\x48"
    b0[24:26] = b"\xbe\xef"
    b1 = bytearray([0x22] * 10 + [0xC0] * 22)
    b1[6:8] = b"\x00\x26"
    b2 = bytes([0xC1] * 8 + [0] * 24)
    want = [(int.from_bytes(b, "little"), k, last, 0)
            for b, k, last in ((b0, 0xFFFFFFFF, 0), (b1, 0xFFFFFFFF, 0), (b2, 0xFF, 1))]
    assert got == [want], [[f"{d:064x}" for d, *_ in beats] for beats in got]
    assert rel_o == [1026] and rel_c == [513]


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def frames(dut, idle, backpressure):
    await start(dut, {"desc__valid": 0, "o__ready": 0})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    fr = _frames(seed)
    modes = {f["desc"]["mode"] for f in fr}
    assert modes == {0, 1, 2}
    assert any(f["out"] is not None and len(f["out"]) <= 32 for f in fr), "no 1-beat frame"
    got, rel_o, rel_c = await _run(dut, fr, idle, backpressure, seed)
    _check(fr, got, rel_o, rel_c)


def test_tx_egress():
    harness.run(_design, DUT, "inceptionn.sim.test_tx_egress")
