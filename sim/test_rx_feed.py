"""RX feed: random frames (payload offset P, compressed bytes after the shim, frames held
in full or not, cut short or padded, tuser on the last beat), each loaded as the front
half's ACT would load it, under every idle (live input) x backpressure (the unit's
ready) pattern. The pieces into the unit must carry exactly the frame's bytes
P + 4 .. P + 4 + rem (fewer if the frame is cut short), one held or live beat per piece,
``first`` only on the first, ``last`` only on the final one (a single empty piece when
rem is 0); the input beats past the stream must be drained; the end-of-input slot must
hold the last beat's tuser and whether the frame was cut short. The held beats are read
through a model of the hold's memory at the address the front half keeps (loaded with
the stream's first held beat, moved on at ``ra_step``)."""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, StreamSource, pause_generator, port_sink, start
from inceptionn.sim.payloads import pack, unpack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "rx_feed"
FRAMES = 60
HOLD = 5


def _design():
    from inceptionn.hw.rx.feed import Feed
    return Feed()


def _frames(seed):
    rng = random.Random(seed)
    out = []
    for n in range(FRAMES):
        p = rng.choice(range(42, 155, 4))
        rem = rng.choice((0, rng.randint(1, 40), rng.randint(1, 400)))
        end = p + 4 + rem
        kind = rng.choice(("exact", "exact", "pad", "short"))
        if kind == "pad":
            flen = end + rng.randint(1, 70)
        elif kind == "short" and rem:
            flen = max(p + 4, end - rng.randint(1, min(rem, 60)))
        else:
            flen = end
        frame = bytes(rng.getrandbits(8) for _ in range(flen))
        out.append({"p": p, "rem": rem, "frame": frame, "user": int(rng.random() < 0.2)})
    return out


def feed_load(f):
    """The feed's registers for frame ``f`` as the front half's CHECK and ACT work them
    out, and the pending slot's fields the feed reads."""
    p, rem, flen = f["p"], f["rem"], len(f["frame"])
    nbeats = (flen + 31) // 32
    nheld = min(nbeats, HOLD)
    held_last = int(nbeats <= HOLD)
    held_kc = flen - 32 * (nheld - 1) if held_last else 32
    held_len = 32 * (nheld - 1) + held_kc
    p4 = p + 4
    idx, first = p4 >> 5, p4 & 31
    zero = rem == 0
    leh = (not held_last) or (rem + p4 <= held_len)
    end_first = held_last and idx + 1 == nheld
    hc0 = (max(held_kc - first, 0) if end_first else 32 - first)
    hv = sum(int(rem + first <= 32 * (j + 1)) << j for j in range(HOLD))
    start = {"go": 1, "idx": idx, "first": first, "rem": rem,
             "live": int(idx >= nheld and not zero), "zero": int(zero), "big": int(rem > 32),
             "rm33": (rem - 33) & 0x7FFF, "hcur": 0 if zero else hc0, "hend": int(end_first),
             "hv": 0x1F if zero else (hv if leh else 0), "user": f["user"] & held_last}
    pend = {"nheld": nheld, "held_last": held_last, "held_kc": held_kc}
    return start, pend, nheld


class _Taken:
    """The live input's ready: a beat is taken when the feed drains it (past the
    stream) or feeds it (``live_take``)."""

    def __init__(self, dut):
        self.drain, self.take = dut.hold__drain, dut.hold__live_take

    @property
    def value(self):
        return int(self.drain.value or self.take.value)


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def feed(dut, idle, backpressure):
    from inceptionn.hw.burst_buffer import PieceLayout
    from inceptionn.hw.rx.layouts import FeedStart, FinSlot, InBeat, Pending
    await start(dut, {"front__start__valid": 0, "hold__beat_valid": 0, "o__ready": 0, "back__fin_clear": 0})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    frames = _frames(seed)
    idl = pause_generator(idle, 10 + seed)
    bp = pause_generator(backpressure, 20 + seed)
    clr = random.Random(30 + seed)
    fin_pending = False            # the slot holds a frame's end not yet read
    fins = []
    cycles = 0
    taken = _Taken(dut)
    # the front half's load strobe: no ready, taken on the clock it is offered
    load = StreamSource(dut.clk, dut.front__start__valid, None,
                        lambda v: setattr(dut.front__start__payload, "value", v))
    for n, f in enumerate(frames):
        fr = f["frame"]
        beats = [fr[i:i + 32] for i in range(0, len(fr), 32)]
        ld, pend, nheld = feed_load(f)
        live = beats[nheld:]
        ra = ld["idx"]
        dut.front__pend.value = pack(Pending, pend)
        await load.send([pack(FeedStart, ld)])      # one clock: the front half's load
        pieces = []

        def put(item, f=f, live=live):
            j, b = item
            last = j == len(live) - 1
            dut.hold__beat.value = pack(InBeat, {
                "data": int.from_bytes(b, "little"), "keep": (1 << len(b)) - 1,
                "last": int(last), "user": f["user"] & last, "kc": len(b)})
        src = StreamSource(dut.clk, dut.hold__beat_valid, taken, put, idl)
        sink = port_sink(dut, "o", pause=bp,
                         on_item=lambda p, pieces=pieces: pieces.append(unpack(PieceLayout, p)))
        tasks = [cocotb.start_soon(src.send(list(enumerate(live)))), cocotb.start_soon(sink.run())]
        fin_seen = False
        while not fin_seen:
            cycles += 1
            assert cycles < 200 * FRAMES + 1000, f"frame {n}: stuck"
            held = beats[ra] if ra < nheld else b""
            dut.hold__f_data.value = int.from_bytes(held.ljust(32, b"\0"), "little")
            dut.back__fin_clear.value = int(fin_pending and clr.random() < 0.5)
            await ReadOnly()
            if dut.front__ra_step.value:
                ra = int(dut.front__ra_next.value)
            if dut.back__fin_clear.value:
                fin_pending = False
            if dut.front__fin_done.value:
                fin_seen = True
            await RisingEdge(dut.clk)
        await ReadOnly()            # the source and sink have seen the last clock
        for t in tasks:
            t.cancel()
        fins.append(unpack(FinSlot, int(dut.back__fin.value)))
        fin_pending = True
        assert src.sent == len(live), f"frame {n}: {len(live) - src.sent} input beats left"
        # The pieces: the frame's bytes of the compressed stream.
        want = fr[f["p"] + 4:f["p"] + 4 + f["rem"]]
        got = b"".join(pc["data"].to_bytes(32, "little")[pc["first"]:pc["first"] + pc["count"]]
                       for pc in pieces)
        assert got == want, f"frame {n}: {len(got)} bytes fed, want {len(want)} ({f})"
        assert [pc["last"] for pc in pieces] == [0] * (len(pieces) - 1) + [1], \
            f"frame {n}: last flags {[pc['last'] for pc in pieces]}"
        assert all(pc["first"] == 0 for pc in pieces[1:]), f"frame {n}: first past piece 0"
        if f["rem"] == 0:
            assert len(pieces) == 1 and pieces[0]["count"] == 0
        trunc = len(fr) < f["p"] + 4 + f["rem"]
        assert fins[-1] == {"valid": 1, "bad": f["user"], "trunc": int(trunc)}, \
            f"frame {n}: end-of-input slot {fins[-1]}, want bad {f['user']} trunc {trunc}"
        # Nothing is fed between frames.
        await RisingEdge(dut.clk)
        dut.o__ready.value = 1
        dut.hold__beat_valid.value = 0
        await ReadOnly()
        assert not dut.o__valid.value, f"frame {n}: a piece offered after FIN"
        await RisingEdge(dut.clk)
        dut.back__fin_clear.value = 0
    assert {int(len(f["frame"]) < f["p"] + 4 + f["rem"]) for f in frames} == {0, 1}


def test_rx_feed():
    harness.run(_design, DUT, "inceptionn.sim.test_rx_feed")
