"""CompressionEngine (TX) against golden.tx_frame, byte for byte, tkeep/tuser/order included,
in every wire format version (the codec port: the paper's codec, version 1, and the
bounded one, in the version the version port names: 2, or 3 with the check word), each
run in one of them or with the codec, version and k changing frame by frame (mixed
versions back to back).

cocotbext-axi drives the idle x backpressure protocol matrix; the lean one-coroutine
player of tb_engine_run carries the bulk runs (payload lengths, corner frames, real
gradients, random stress, mid-frame reset). Counters are checked against the golden
model's after every run.
"""

import random

import numpy as np

import cocotb
from cocotb.triggers import RisingEdge

from inceptionn.rtl import harness
from inceptionn.rtl.designs import DESIGNS
from inceptionn.sim.axis import AxisDriver, Clock, PAUSE_MODES, Streams, frame_to_beats, pause_generator, stress_count
from inceptionn.sim.tb_engine_run import CODEC_NAMES, codec_port, configure, play, read_counters, reset
from inceptionn.rtl.rtl_golden import tx_frame as rtl_tx_frame

DUT = DESIGNS["tx"][0]
TX_COUNTERS = ("frames_in", "frames_out", "compressed", "bypassed", "fallback", "dropped",
               "payload_bytes_in", "payload_bytes_out", "version1", "version2", "version3")
CODECS = ("paper", "bounded")
# The wire versions as port settings: version 1 (the paper's codec), 2 and 3 (bounded).
VARIANTS = ({"codec": "paper"}, {"codec": "bounded", "version": 2},
            {"codec": "bounded", "version": 3})
DEMO_DIR = harness.BUILD / "demo"


def _golden_cfg(cfg, frame_cfg=None):
    """The engine's configuration as golden.tx_frame takes it (the codec by name)."""
    kw = {**cfg, **(frame_cfg or {})}
    kw["codec"] = CODEC_NAMES[codec_port(kw.get("codec", "bounded"))]
    kw.setdefault("version", 3)                   # the harness's version port
    return kw


def expected(frames, cfgs=None, **cfg):
    """(golden output frames [(bytes, tuser)], golden Counters); ``cfgs`` as for play."""
    from inceptionn import golden
    c = golden.Counters()
    out = []
    for idx, (frame, user) in enumerate(frames):
        kw = _golden_cfg(cfg, cfgs[idx] if cfgs else None)
        res = rtl_tx_frame(frame, tuser=user, counters=c, **kw)
        if res is not None:
            out.append((res, bool(user)))
    return out, c


def check(dut, frames, got, cfgs=None, **cfg):
    want, c = expected(frames, cfgs, **cfg)
    assert len(got) == len(want), f"{len(got)} frames out, golden {len(want)}"
    for idx, ((g, gu), (w, wu)) in enumerate(zip(got, want)):
        if g != w:
            diff = next((j for j in range(min(len(g), len(w))) if g[j] != w[j]), None)
            raise AssertionError(f"frame {idx}: {len(g)} bytes, golden {len(w)}; first "
                                 f"difference at byte {diff}")
        assert gu == wu, f"frame {idx}: tuser {gu}, golden {wu}"
    counters = read_counters(dut)
    for name in TX_COUNTERS:
        assert counters[name] == getattr(c, name), f"counter {name}: {counters[name]} != {getattr(c, name)}"
    return c


def n_out(frames, cfgs=None, **cfg):
    return len(expected(frames, cfgs, **cfg)[0])


def mixed_cfgs(n, seed):
    """Per frame a random wire version and a k of its codec's range (mixed versions back
    to back)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        v = dict(rng.choice(VARIANTS))
        v["version"] = v.get("version", 3)
        out.append({**v, "k": rng.randint(1, 16 if v["codec"] == "bounded" else 126)})
    return out


async def start(dut, **cfg):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    configure(dut, **cfg)
    await reset(dut)


def _payload(rng, nbytes):
    vals = np.asarray(rng.normal(0, 1e-3, (nbytes + 3) // 4), dtype="<f4")
    return vals.tobytes()[:nbytes]


def matrix_frames():
    from inceptionn.rtl import frame_builders as F
    rng = np.random.default_rng(7)
    return [
        (F.udp_frame(_payload(rng, 40)), False),
        (F.tcp_frame(_payload(rng, 203), tcp_options=[("MSS", 1460), ("NOP", None),
                                                      ("NOP", None), ("Timestamp", (1, 2))]), False),
        (F.arp_frame(), False),
        (F.udp_frame(_payload(rng, 97), vlan=12, checksum=False), False),
        (F.udp_frame(_payload(rng, 64)), True),
        (F.udp_frame(F.incompressible_payload(70, 3)), False),
        (F.tcp_frame(_payload(rng, 5), ip_options=b"\x94\x04\x00\x00", pad_to=80), False),
        (F.udp_frame(_payload(rng, 300), tos=0x29), False),
        (F.raw_frame(7, 1), False),
        (F.udp_frame(_payload(rng, 33)), False),
    ]


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def protocol_matrix(dut, idle, backpressure):
    """cocotbext-axi source/sink with idle and backpressure patterns; the wire versions
    take turns over the matrix (each pattern of idle and of backpressure meets each)."""
    from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
    variant = VARIANTS[(PAUSE_MODES.index(idle) + PAUSE_MODES.index(backpressure)) % 3]
    await start(dut, **variant)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    src.set_pause_generator(pause_generator(idle, 1))
    sink.set_pause_generator(pause_generator(backpressure, 2))
    frames = matrix_frames()
    for f, u in frames:
        await src.send(AxiStreamFrame(f, tuser=int(u)))
    got = []
    for _ in range(len(frames)):
        rx = await sink.recv()
        user = rx.tuser[-1] if isinstance(rx.tuser, list) else rx.tuser
        got.append((bytes(rx.tdata), bool(user)))
    for _ in range(20):
        await RisingEdge(dut.clk)
    assert sink.empty()
    check(dut, frames, got, **variant)


def length_frames():
    """Every payload length 0..100 plus 1448, 1460, 8972, as UDP and as TCP."""
    from inceptionn.rtl import frame_builders as F
    rng = np.random.default_rng(11)
    out = []
    for n in list(range(0, 101)) + [1448, 1460, 8972]:
        out.append((F.udp_frame(_payload(rng, n)), False))
        out.append((F.tcp_frame(_payload(rng, n)), False))
    return out


@cocotb.test()
@cocotb.parametrize(mode=["none", "random"], variant=VARIANTS)
async def payload_lengths(dut, mode, variant):
    await start(dut, **variant)
    frames = length_frames()
    res = await play(dut, frames, idle=mode, backpressure=mode, seed=3)
    c = check(dut, frames, res["frames_out"], **variant)
    assert c.compressed > 150


def corner_frames():
    from inceptionn.rtl import frame_builders as F
    rng = np.random.default_rng(5)
    opts = [("MSS", 1460), ("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
    special = F.special_payload()
    frames = [
        F.tcp_frame(_payload(rng, 500), tcp_options=opts),
        F.tcp_frame(_payload(rng, 777), tcp_options=[("NOP", None)] * 40),      # doff 15
        F.tcp_frame(_payload(rng, 611), tcp_options=[("MSS", 1460)] + [("NOP", None)] * 4),
        F.tcp_frame(_payload(rng, 8911), tcp_options=[("NOP", None)] * 8),      # P mod 32 = 30
        F.udp_frame(_payload(rng, 301), checksum=False),
        F.udp_frame(_payload(rng, 301)),
        F.udp_frame(_payload(rng, 1000), vlan=100),
        F.tcp_frame(_payload(rng, 900), vlan=7, ip_options=b"\x01" * 40,
                    tcp_options=[("NOP", None)] * 40),                       # P = 138
        F.udp_frame(_payload(rng, 257), ip_options=b"\x94\x04\x00\x00" * 3),
        F.fragment_frame(_payload(rng, 100)),
        F.fragment_frame(_payload(rng, 100), more_fragments=False, offset=64),
        F.arp_frame(),
        F.ipv6_frame(_payload(rng, 100)),
        F.ipv4_frame(_payload(rng, 100)),
        F.udp_frame(special), F.tcp_frame(special * 7), F.udp_frame(special + b"\x01\x02\x03"),
        F.udp_frame(F.incompressible_payload(1460, 1)),                       # fall-back
        F.tcp_frame(F.incompressible_payload(8, 2), vlan=3),                   # fall-back
        F.udp_frame(F.incompressible_payload(8972, 4)),                        # jumbo fall-back
        F.udp_frame(_payload(rng, 10), pad_to=60), F.udp_frame(b"", pad_to=60),
        F.raw_frame(1, 2), F.raw_frame(13, 3), F.raw_frame(33, 4),
        bytes(F.udp_frame(_payload(rng, 400)))[:100],                         # truncated
        F.udp_frame(_payload(rng, 9216 - 42)),                                # exactly 9216 bytes
        F.udp_frame(_payload(rng, 9217 - 42)),                                # dropped
        F.raw_frame(12000, 5),                                                # dropped
        F.udp_frame(np.zeros(100, dtype="<f4").tobytes()),                     # all tag 00
        F.udp_frame(np.full(100, -0.0, dtype="<f4").tobytes()),
    ]
    for tos in (0x00, 0x29, 0x2A, 0x2B, 0x2C, 0xA8):
        frames.append(F.udp_frame(_payload(rng, 200), tos=tos))
    out = [(f, False) for f in frames]
    out += [(F.udp_frame(_payload(rng, 300)), True), (F.tcp_frame(_payload(rng, 2)), True),
            (F.raw_frame(5, 6), True), (F.udp_frame(_payload(rng, 9200)), True)]
    random.Random(1).shuffle(out)
    return out


@cocotb.test()
@cocotb.parametrize(mode=["none", "cyclic"])
async def corner_cases(dut, mode):
    """The corner frames with the codec and k changing frame by frame."""
    await start(dut)
    frames = corner_frames()
    cfgs = mixed_cfgs(len(frames), seed=len(mode))
    res = await play(dut, frames, idle=mode, backpressure=mode, seed=9,
                     expect=n_out(frames, cfgs), cfgs=cfgs)
    c = check(dut, frames, res["frames_out"], cfgs)
    assert c.dropped == 3 and c.fallback >= 3 and c.compressed >= 10
    assert c.version1 >= 3 and c.version2 >= 3 and c.version3 >= 3


@cocotb.test()
@cocotb.parametrize(cfg=[dict(enable=False), dict(k=0), dict(k=127), dict(k=1), dict(k=126),
                         dict(k=4), dict(dscp=11), dict(dscp=0)]
                    + [dict(cfg, codec="paper") for cfg in (dict(k=0), dict(k=1), dict(k=126),
                                                            dict(k=127), dict(enable=False))]
                    + [dict(codec="bounded", k=k) for k in (0, 1, 16, 17, 126, 127)]
                    + [dict(codec="bounded", version=v) for v in (0, 1, 2)]
                    + [dict(codec="paper", version=v) for v in (0, 2)])
async def configuration(dut, cfg):
    from inceptionn.rtl import frame_builders as F
    await start(dut, **cfg)
    rng = np.random.default_rng(2)
    frames = [(F.udp_frame(_payload(rng, 300), tos=tos), False) for tos in (0x28, 0x2C, 0x00, 0x2D)]
    frames += [(F.tcp_frame(_payload(rng, 1000)), False)]
    res = await play(dut, frames, expect=n_out(frames, **cfg))
    check(dut, frames, res["frames_out"], **cfg)


@cocotb.test()
async def config_changes_per_frame(dut):
    """k, codec, version and dscp apply from the frame whose first beat sees them."""
    from inceptionn.rtl import frame_builders as F
    await start(dut)
    rng = np.random.default_rng(4)
    jobs = [(F.udp_frame(_payload(rng, 700)), k, codec, version)
            for k, codec, version in ((10, 0, 3), (3, 1, 2), (20, 0, 2), (20, 1, 3),
                                      (126, 0, 3), (16, 1, 3), (1, 0, 2), (1, 1, 2),
                                      (10, 1, 3), (10, 0, 3), (10, 1, 0), (5, 1, 3))]
    outs = []
    for frame, k, codec, version in jobs:
        dut.k.value = k
        dut.codec.value = codec
        dut.version.value = version
        res = await play(dut, [(frame, False)], drain=4)
        outs.extend(res["frames_out"])
    for (frame, k, codec, version), (got, _) in zip(jobs, outs):
        assert got == rtl_tx_frame(frame, k=k, codec=CODECS[codec], version=version), \
            f"k={k} codec={codec} version={version}"


@cocotb.test()
async def every_k(dut):
    """One frame per k of each codec's range (and the bypassing values around them),
    back to back, the codec and k switching per frame."""
    from inceptionn.rtl import frame_builders as F
    await start(dut)
    rng = np.random.default_rng(12)
    cfgs = ([{"codec": "paper", "k": k} for k in range(0, 128)]
            + [{"codec": "bounded", "k": k, "version": 2 + k % 2} for k in range(0, 18)]
            + [{"codec": "bounded", "k": 127}])
    random.Random(12).shuffle(cfgs)
    frames = [(F.udp_frame(_payload(rng, 100 + 7 * i)), False) for i in range(len(cfgs))]
    res = await play(dut, frames, idle="random", backpressure="none", seed=12, cfgs=cfgs)
    c = check(dut, frames, res["frames_out"], cfgs)
    assert c.version1 == 126 and c.version2 == 8 and c.version3 == 8


@cocotb.test()
async def real_gradients(dut):
    from inceptionn.rtl import frame_builders as F
    await start(dut)
    vals, source = F.gradient_values(365 * 40, seed=8, demo_dir=DEMO_DIR)
    dut._log.warning(f"real_gradients: payload values from {source}")
    frames = [(F.udp_frame(F.float_payload(vals[i * 365:(i + 1) * 365])), False) for i in range(20)]
    frames += [(F.tcp_frame(F.float_payload(vals[7300 + i * 362:7300 + (i + 1) * 362])), False)
               for i in range(20)]
    cfgs = [{"version": 3, **VARIANTS[i % 3]} for i in range(len(frames))]
    res = await play(dut, frames, idle="random", backpressure="random", seed=4, cfgs=cfgs)
    c = check(dut, frames, res["frames_out"], cfgs)
    assert c.compressed == len(frames)


@cocotb.test()
async def random_stress(dut):
    from inceptionn.rtl import frame_builders as F
    count = stress_count(500, 10000)
    await start(dut)
    frames = F.mixed_frames(21, count)
    cfgs = mixed_cfgs(len(frames), seed=21)
    res = await play(dut, frames, idle="random", backpressure="random", seed=6,
                     expect=n_out(frames, cfgs), cfgs=cfgs,
                     timeout_cycles=50 * res_beats(frames) + 100_000)
    c = check(dut, frames, res["frames_out"], cfgs)
    dut._log.warning(f"random_stress: {count} frames, {c.compressed} compressed, "
                     f"{c.fallback} fall-back, {c.bypassed} bypassed, {c.dropped} dropped")
    assert c.compressed > count // 2 and c.bypassed > count // 20


def res_beats(frames):
    return sum(len(f) // 32 + 1 for f, _ in frames)


@cocotb.test()
async def reset_mid_frame(dut):
    """Reset while frames are half in and half out: the next frames come out right."""
    from inceptionn.rtl import frame_builders as F
    await start(dut)
    rng = np.random.default_rng(9)
    first = [(F.udp_frame(_payload(rng, 3000)), False), (F.tcp_frame(_payload(rng, 1400)), False)]
    beats = [b for f, u in first for b in frame_to_beats(f, u)]
    dut.m_axis_tready.value = 1                 # what comes out before the reset is dropped
    drv = AxisDriver(dut, dut.clk)
    drv.load(beats[:120])
    await Streams(dut.clk, drv).run_until(lambda: drv.sent == 120, 100_000,
                                          lambda: f"{drv.sent} of 120 beats in")
    await reset(dut)
    frames = [(F.udp_frame(_payload(rng, n)), False) for n in (40, 1460, 3)] + first
    res = await play(dut, frames, idle="cyclic", backpressure="random", seed=2)
    check(dut, frames, res["frames_out"], codec="bounded")


@cocotb.test()
@cocotb.parametrize(size=[1514, 9014], variant=VARIANTS)
async def line_rate(dut, size, variant):
    """Back-to-back compressible frames, sink always ready: one input beat per clock."""
    from inceptionn.rtl import frame_builders as F
    await start(dut, **variant)
    vals, _ = F.gradient_values((size - 42) // 4 * 12, seed=3, demo_dir=None)
    n = (size - 42) // 4
    frames = [(F.udp_frame(F.float_payload(vals[i * n:(i + 1) * n])), False) for i in range(12)]
    assert all(len(f) == size for f, _ in frames)
    res = await play(dut, frames)
    check(dut, frames, res["frames_out"], **variant)
    # Steady state: the span from frame 2's last beat to frame 11's last beat.
    spans = res["in_last_cycle"]
    beats = sum(-(-len(f) // 32) for f, _ in frames[2:11])
    assert spans[10] - spans[1] == beats, f"{beats} beats took {spans[10] - spans[1]} cycles"


def test_compression_engine():
    from inceptionn.sim.engines import tx_design
    harness.run(tx_design, DUT, "inceptionn.sim.test_compression_engine")
