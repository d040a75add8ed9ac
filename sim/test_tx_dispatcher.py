"""TX dispatcher: random frames' match info and config, under every idle x backpressure
pattern (the outputs' readies independent of each other; the block is combinational, so
one step stands for a clock of the FIFOs around it); per frame, in order, the mode
entry (compress = header_ok and config ok, the header checksums' bounds), and for
compressed frames only the realigner config, k with the codec and the rotated shim (magic
0xC5, 0xC6 or 0xC7: wire format version 1, 2 or 3) must come out as
worked out here from the frame's fields. Outputs are write strobes: none may be valid
while its ready is low, and info / cfg are popped together."""

import random

import cocotb
from cocotb.triggers import ReadOnly, Timer

from inceptionn.hw.wire import SHIM_MAGIC, SHIM_MAGIC_V2, SHIM_MAGIC_V3
from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, StreamSource, Streams, pause_generator, port_sink
from inceptionn.sim.headers import header_layout, match_info
from inceptionn.sim.payloads import pack, unpack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "tx_dispatcher"
FRAMES = 200
OUTS = ("mode", "rl_cfg", "k", "shim")


def _design():
    from inceptionn.hw.tx.dispatcher import Dispatcher
    return Dispatcher()


def _frames(seed):
    rng = random.Random(seed)
    out = []
    for _ in range(FRAMES):
        info = match_info(rng, header_layout(rng), header_ok=int(rng.random() < 0.7),
                          payload_len=rng.randint(0, 9000), ip_total_len=rng.getrandbits(16),
                          min_frame_len=rng.getrandbits(17))
        v2 = rng.getrandbits(1)
        cfg = {"ok": int(rng.random() < 0.8), "k": rng.randint(0, 127), "v2": v2,
               "v3": v2 & rng.getrandbits(1)}     # version 3: the bounded codec only
        out.append((info, cfg))
    return out


def _expected(info, cfg):
    want = info["header_ok"] & cfg["ok"]
    l3, l4 = info["l3"], info["l4"]
    bounds = {"ip4": l3 + 4, "ip10": l3 + 10, "ip12": l3 + 12, "ip20": l3 + 20,
              "l4c": l4 + (6 if info["udp"] else 16), "l4c2": l4 + (8 if info["udp"] else 18)}
    mode = {"info": info, "compress": want, "k": cfg["k"], "v2": cfg["v2"], "v3": cfg["v3"],
            "bounds": bounds}
    if not want:
        return mode, None
    po, n = info["payload_offset"], info["payload_len"]
    magic = SHIM_MAGIC_V3 if cfg["v3"] else SHIM_MAGIC_V2 if cfg["v2"] else SHIM_MAGIC
    shim = [n >> 8, n & 0xFF, magic, cfg["k"]]
    c = po % 4
    rot = sum(shim[(j - c) % 4] << (8 * j) for j in range(4))
    return mode, {"rl_cfg": {"skip": po, "insert": 0, "length": n}, "k": cfg["k"] | (cfg["v2"] << 7),
                  "shim": {"plane": po % 32, "shim_rot": rot, "v3": cfg["v3"]}}


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def dispatch(dut, idle, backpressure):
    from inceptionn.hw.packet_matcher import MatchInfo
    from inceptionn.hw.realigner import realigner_cfg
    from inceptionn.hw.tx.layouts import FrameCfg, FrameMode, HdrBounds, ShimInfo
    # The dispatcher is combinational (it has no clock): one step per 2 ns.
    for name in ("info__valid", "cfg__valid", *(f"{o}__ready" for o in OUTS)):
        getattr(dut, name).value = 0
    await Timer(2, "ns")
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    frames = _frames(seed)
    want = [_expected(*f) for f in frames]
    want_mode = [w[0] for w in want]
    want_c = [w[1] for w in want if w[1] is not None]
    # info and cfg: FIFO-like sources offered independently, one step per 2 ns.
    srcs = []
    for name, layout, k, part in (("info", MatchInfo, 10, 0), ("cfg", FrameCfg, 30, 1)):
        payload = getattr(dut, f"{name}__payload")

        def put(v, payload=payload):
            payload.value = v
        src = StreamSource(None, getattr(dut, f"{name}__valid"), getattr(dut, f"{name}__ready"),
                           put, pause_generator(idle, k + seed), step=lambda: Timer(2, "ns"))
        srcs.append(cocotb.start_soon(src.send([pack(layout, f[part]) for f in frames])))
    got = {o: [] for o in OUTS}
    sinks = [port_sink(dut, o, pause=pause_generator(backpressure, 50 + 7 * n + seed),
                       on_item=got[o].append) for n, o in enumerate(OUTS)]

    def check():
        ir, cr = int(dut.info__ready.value), int(dut.cfg__ready.value)
        assert ir == cr, "info and cfg must be popped together"
        if ir:
            assert dut.info__valid.value and dut.cfg__valid.value, "popped an empty input"
        # The outputs are write strobes into FIFOs: valid only with ready.
        for o in OUTS:
            if getattr(dut, f"{o}__valid").value:
                assert getattr(dut, f"{o}__ready").value, f"{o} written while not ready"
    streams = Streams(None, *sinks, check=check, step=lambda: Timer(2, "ns"))
    await Timer(2, "ns")            # (the sources' first step)
    await streams.run_until(lambda: len(got["mode"]) >= FRAMES, 20 * FRAMES + 100,
                            lambda: f"stuck: {len(got['mode'])} of {FRAMES} frames")
    cycles = streams.cycle
    await Timer(2, "ns")            # the sources see the last entries taken
    await ReadOnly()
    assert all(t.done() for t in srcs), "inputs left over"
    for n, (g, w) in enumerate(zip(got["mode"], want_mode)):
        m = unpack(FrameMode, g)
        assert unpack(MatchInfo, m["info"]) == w["info"], f"frame {n}: mode.info"
        assert m["compress"] == w["compress"], f"frame {n}: compress {m['compress']}"
        assert (m["k"], m["v2"], m["v3"]) == (w["k"], w["v2"], w["v3"]), f"frame {n}: k, v2, v3"
        assert unpack(HdrBounds, m["bounds"]) == w["bounds"], (
            f"frame {n}: bounds {unpack(HdrBounds, m['bounds'])}, want {w['bounds']}")
    for o in ("rl_cfg", "k", "shim"):
        assert len(got[o]) == len(want_c), f"{o}: {len(got[o])} entries, want {len(want_c)}"
    for n, w in enumerate(want_c):
        assert unpack(realigner_cfg(), got["rl_cfg"][n]) == w["rl_cfg"], f"comp frame {n}: rl_cfg"
        assert got["k"][n] == w["k"], f"comp frame {n}: k"
        assert unpack(ShimInfo, got["shim"][n]) == w["shim"], (
            f"comp frame {n}: shim {unpack(ShimInfo, got['shim'][n])}, want {w['shim']}")
    if idle == "none" and backpressure == "none":
        assert cycles <= FRAMES + 5, f"{FRAMES} frames took {cycles} cycles"


def test_tx_dispatcher():
    harness.run(_design, DUT, "inceptionn.sim.test_tx_dispatcher")
