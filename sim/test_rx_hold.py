"""RX hold: random frames of 1..8 beats (tuser on some), each held from HEAD (the front
half's ``restart``) under every idle x (other states' input ready) pattern: the first
min(beats, 5) beats must be taken at once and written to the bank now held, ``done``
must strobe on the last of them with the held frame's facts (beats, the last one's
count, keep and tuser, bytes held, ``enable`` from the first beat) as worked out here;
both read ports must return the held beats; ``take`` must switch the bank; outside HEAD
the input's ready must be the OR of the other states' terms; ``frames_in`` counts last
beats taken."""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, StreamSource, Streams, pause_generator, start
from inceptionn.sim.payloads import pack, unpack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "rx_hold"
FRAMES = 40


def _design():
    from inceptionn.hw.rx.hold import Hold
    return Hold()


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, others=PAUSE_MODES)
async def hold(dut, idle, others):
    from inceptionn.hw.rx.layouts import HeldFrame, InBeat
    await start(dut, {"beats__valid": 0, "feed__drain": 0, "back__pass_take": 0, "feed__live_take": 0,
                      "front__take": 0, "front__restart": 0, "enable": 1})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(others)
    rng = random.Random(seed)
    idl = pause_generator(idle, 10 + seed)
    oth = pause_generator(others, 20 + seed)
    bank = 0
    lasts = [0]
    terms = [0, 0, 0]                       # the other states' ready terms this clock

    def put_head(b):
        dut.beats__payload.value = b["payload"]
        side(b["i"])

    def side(i):
        # enable and the accepted versions' mask are sampled on the first beat alone:
        # scrambled on every other clock, offered or not
        dut.enable.value = en if i == 0 else 1 - en
        dut.versions.value = versions if i == 0 else 7 - versions

    def put_rest(b):
        terms[:] = [int(not next(oth)) for _ in range(3)]
        dut.feed__drain.value, dut.back__pass_take.value, dut.feed__live_take.value = terms
        dut.beats__payload.value = b["payload"]

    def taken(b):
        lasts[0] += (b() if callable(b) else b)["last"]
    src = StreamSource(dut.clk, dut.beats__valid, dut.beats__ready, put_head, pause=idl,
                       on_taken=taken, on_idle=lambda: side(src.sent - base))

    def check_head():
        b = src.offered
        assert int(dut.front__head.value) == 1
        assert int(dut.beats__ready.value) == 1, "HEAD takes every beat"
        assert int(dut.restore__beat_valid.value) == int(b is not None)
        if b is not None:
            assert int(dut.sniff__valid.value) == 1
            assert int(dut.restore__beat_sel.value) == ((1 << b["i"]) & 7)
            assert bool(dut.front__done.value) == (b["i"] == hold_n - 1), \
                f"frame {n}: done at beat {b['i']}"
        else:
            assert not dut.front__done.value

    def check_rest():
        # outside HEAD the input's ready is the others' (the rest of the frame goes by)
        assert int(dut.beats__ready.value) == int(any(terms))
        assert int(dut.sniff__valid.value) == int(any(terms))
        assert not dut.restore__beat_valid.value and not dut.front__done.value
    head = Streams(dut.clk, src, check=check_head)
    rest = Streams(dut.clk, src, check=check_rest)
    for n in range(FRAMES):
        nb = rng.randint(1, 8)
        flen = 32 * (nb - 1) + rng.randint(1, 32)
        frame = bytes(rng.getrandbits(8) for _ in range(flen))
        user = rng.getrandbits(1)
        en = rng.getrandbits(1)
        versions = rng.getrandbits(3)           # the accepted wire versions' mask
        beats = [frame[i:i + 32] for i in range(0, flen, 32)]
        hold_n = min(nb, 5)
        lastb = [int(i == nb - 1) for i in range(nb)]
        # HEAD: every offered beat is taken; done on the last held one
        src.put, src.pause, base = put_head, idl, src.sent
        src.load({"i": i, "last": lastb[i], "payload": pack(InBeat, {
            "data": int.from_bytes(beats[i], "little"), "keep": (1 << len(beats[i])) - 1,
            "last": lastb[i], "user": user & lastb[i], "kc": len(beats[i])})}
            for i in range(hold_n))
        await head.run_until(lambda: src.sent - base == hold_n, 1000, lambda: f"frame {n}: HEAD")
        src.load(())
        await ReadOnly()
        held = unpack(HeldFrame, int(dut.front__held.value))
        kc = len(beats[hold_n - 1])
        assert held == {"nheld": hold_n, "hsel": (1 << hold_n) & 0x1F, "last": int(nb <= 5),
                        "kc": kc, "keep": (1 << kc) - 1, "user": user & int(nb <= 5),
                        "len": 32 * (hold_n - 1) + kc, "en": en, "versions": versions,
                        "bank": bank}, \
            f"frame {n}: held {held}"
        assert not dut.front__head.value
        # the held beats through both read ports (addresses in, data out: no handshake)
        for j in range(hold_n):
            await RisingEdge(dut.clk)
            dut.front__f_addr.value = (bank << 3) | j
            dut.egress__hdr_addr.value = (bank << 3) | (hold_n - 1 - j)
            await ReadOnly()
            want_f = int.from_bytes(beats[j], "little")
            want_o = int.from_bytes(beats[hold_n - 1 - j], "little")
            assert int(dut.front__f_data.value) == want_f, f"frame {n}: f_data, beat {j}"
            assert int(dut.egress__hdr_data.value) == want_o, f"frame {n}: o_data"
        # the rest of the frame, offered without pause, taken when another state takes it
        await RisingEdge(dut.clk)
        src.put, src.pause, base = put_rest, pause_generator("none"), src.sent
        # (callables: put_rest draws the other states' terms on every clock offered)
        src.load((lambda b=b: b) for b in ({"i": i, "last": lastb[i], "payload": pack(InBeat, {
            "last": lastb[i], "user": user & lastb[i]})} for i in range(hold_n, nb)))
        await rest.run_until(lambda: src.sent - base == nb - hold_n, 1000,
                             lambda: f"frame {n}: the rest")
        src.load(())
        dut.feed__drain.value = dut.back__pass_take.value = dut.feed__live_take.value = 0
        # ACT takes the frame (the bank switches), then HEAD again
        dut.front__take.value = 1
        await RisingEdge(dut.clk)
        dut.front__take.value = 0
        bank ^= 1
        dut.front__restart.value = 1
        await RisingEdge(dut.clk)
        dut.front__restart.value = 0
        await ReadOnly()
        held = unpack(HeldFrame, int(dut.front__held.value))
        assert held["bank"] == bank and held["nheld"] == 0 and held["hsel"] == 1
        assert int(dut.front__head.value) == 1
        assert int(dut.frames_in.value) == lasts[0], f"frame {n}: frames_in"
        await RisingEdge(dut.clk)


def test_rx_hold():
    harness.run(_design, DUT, "inceptionn.sim.test_rx_hold")
