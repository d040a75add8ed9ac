"""TX hardware benchmark: the CompressionEngine RTL measured in simulation (Verilator).

``measure()`` returns rows for the benchmark table; ``inceptionn bench hw`` prints them.
Every output frame is also checked against golden.tx_frame, so a number is only
reported for a run that was right.

Rows, in every wire format version (the codec port: the paper's codec, version 1, and
the bounded one in the version its version port names, 2 or 3; k = 10): input beats accepted per clock on back-to-back
compressible 1514- and 9014-byte frames (sink always ready), the same for
all-incompressible frames (fall-back), the latency from a frame's first input beat to
its first output beat, and the output beats per input beat on the demo's real gradients
(build/demo/*.npy, when present).
"""

import numpy as np

from . import frame_builders as F
from .rtl_loop import run_frames
from .harness import BUILD

__all__ = ["measure"]

DEMO_DIR = BUILD / "demo"


def _verify(frames, res, **cfg):
    from . import rtl_golden
    want = []
    for f in frames:
        out = rtl_golden.tx_frame(f, **cfg)
        if out is not None:
            want.append(out)
    got = [f for f, _ in res.frames_out]
    if got != want:
        bad = next(i for i, (g, w) in enumerate(zip(got + [None] * len(want), want)) if g != w)
        raise AssertionError(f"RTL output differs from golden.tx_frame at frame {bad}")


def _frames(size, count, values):
    n = (size - 42) // 4
    need = n * count
    vals = np.resize(values, need)
    return [F.udp_frame(F.float_payload(vals[i * n:(i + 1) * n])) for i in range(count)]


# (codec, the wire version TX writes): each measured in turn
VERSIONS = (("paper", 1), ("bounded", 2), ("bounded", 3))


def _row(codec, version, case, metric, value, note=""):
    return {"version": version, "codec": codec, "case": case,
            "metric": metric, "value": value, "note": note}


def measure(count_1514=24, count_9014=8):
    """Run the benchmark scenarios on the RTL; returns a list of row dicts
    {case, metric, value, note}."""
    rows = []
    synth, synth_src = F.gradient_values(200_000, seed=1, demo_dir=None)
    for codec, version in VERSIONS:
        rows += _measure_codec(codec, version, count_1514, count_9014, synth, synth_src)
    return rows


def _measure_codec(codec, version, count_1514, count_9014, synth, synth_src):
    rows = []
    tv = max(version, 2)        # the version port (the paper's codec ignores it)

    def row(*a):
        return _row(codec, version, *a)
    for size, count in ((1514, count_1514), (9014, count_9014)):
        frames = _frames(size, count, synth)
        res = run_frames("tx", frames, codec=codec, version=tv)
        _verify(frames, res, codec=codec, version=tv)
        case = f"{count} x {size} B compressible, back-to-back"
        rows.append(row(case, "input beats / clock", round(res.in_beats / res.in_cycles, 4),
                         f"{res.in_beats} beats in {res.in_cycles} clocks; {synth_src}"))
        rows.append(row(case, "latency (clocks, first beat in -> first beat out)",
                         f"{res.latency[0]}..{res.latency[1]}", ""))
        rows.append(row(case, "output beats / input beat",
                         round(res.out_beats / res.in_beats, 4),
                         f"compressed {res.counters['compressed']} of {count}"))
    frames = [F.udp_frame(F.incompressible_payload(1472, i)) for i in range(count_1514)]
    res = run_frames("tx", frames, codec=codec, version=tv)
    _verify(frames, res, codec=codec, version=tv)
    case = f"{count_1514} x 1514 B incompressible (fall-back)"
    rows.append(row(case, "input beats / clock", round(res.in_beats / res.in_cycles, 4),
                     f"fall-back {res.counters['fallback']} of {count_1514}"))
    rows.append(row(case, "latency (clocks, first beat in -> first beat out)",
                     f"{res.latency[0]}..{res.latency[1]}", ""))
    vals, src = F.gradient_values(368 * count_1514, seed=2, demo_dir=DEMO_DIR)
    frames = _frames(1514, count_1514, vals)
    res = run_frames("tx", frames, codec=codec, version=tv)
    _verify(frames, res, codec=codec, version=tv)
    case = f"{count_1514} x 1514 B gradients"
    rows.append(row(case, "output beats / input beat",
                     round(res.out_beats / res.in_beats, 4), src))
    rows.append(row(case, "payload bytes out / in",
                     round(res.counters["payload_bytes_out"] / res.counters["payload_bytes_in"], 4),
                     src))
    return rows
