"""The engines at 512 bits a beat (hw/engine_lanes.py) beside the 256-bit engines, on the
same frames in the same run (Verilator, the compiled loop: source never idle, sink
always ready). Every output frame is checked against golden first.

TX: input beats a clock on back-to-back frames of 64, 1514 and 9014 bytes, compressible
(N(0, 1e-3) gradients, k = 10), incompressible (fall-back) and bypassed (enable 0);
latency from a frame's first beat in to its first beat out. RX: output beats a clock on
the compressed forms (golden TX, version 3, k = 10) of back-to-back 1514- and 9014-byte
frames of real gradients (the demo's, or N(0, 1e-3) when absent) and on bypassed frames
(the originals, not compressed); the same latency. A beat is 32 bytes at 256 bits and 64
at 512, so Gb/s at 250 MHz is beats/clock x bits x 0.25.
"""

import numpy as np

__all__ = ["measure", "WIDTHS"]

WIDTHS = ((256, "tx", "rx"), (512, "tx512", "rx512"))
CLOCK_MHZ = 250


def _udp_frames(size, count, values):
    from . import frame_builders as F
    nbytes = size - 42                        # Ethernet 14 + IPv4 20 + UDP 8
    n = -(-nbytes // 4)
    vals = np.resize(values, n * count)
    out = [F.udp_frame(F.float_payload(vals[i * n:(i + 1) * n])[:nbytes]) for i in range(count)]
    assert all(len(f) == size for f in out), size
    return out


def _fallback_frames(size, count):
    from . import frame_builders as F
    return [F.udp_frame(F.incompressible_payload(size - 42, i)) for i in range(count)]


def _row(bits, engine, case, frames, res, beats_key):
    beats = res.in_beats if beats_key == "in" else res.out_beats
    cycles = res.in_cycles if beats_key == "in" else res.cycles
    rate = beats / cycles
    lat = res.latency
    return {"engine": engine, "bits": bits, "case": case, "frames": len(frames),
            f"{beats_key} beats/clk": round(rate, 4),
            "Gb/s @250MHz": round(rate * bits * CLOCK_MHZ / 1000, 1),
            "latency (clk)": f"{lat[0]}..{lat[1]}"}


def _check(got, want, what):
    """``want``: golden's frames (TX: bytes, None for a dropped one; RX: (bytes, tuser))."""
    want = [w if isinstance(w, tuple) else (w, False) for w in want if w is not None]
    if got != want:
        raise AssertionError(f"RTL output differs from golden: {what}")


def measure(counts=None, widths=WIDTHS):
    """Rows {engine, bits, case, frames, rate, Gb/s, latency}; raises if a frame differs
    from golden."""
    from .frame_builders import gradient_values
    from .harness import BUILD
    from .rtl_golden import rx_frame, tx_frame
    from .rtl_loop import run_frames
    counts = counts or {64: 64, 1514: 24, 9014: 8}
    synth, _ = gradient_values(200_000, seed=1, demo_dir=None)
    real, real_src = gradient_values(200_000, seed=2, demo_dir=BUILD / "demo")
    rows = []
    for bits, tx, rx in widths:
        for size, count in counts.items():
            cases = (("compressible", _udp_frames(size, count, synth), True),
                     ("fall-back", _fallback_frames(size, count), True),
                     ("bypassed", _udp_frames(size, count, synth), False))
            for name, frames, enable in cases:
                res = run_frames(tx, frames, enable=enable)
                _check(res.frames_out, [tx_frame(f, enable=enable) for f in frames],
                       f"TX {bits} {name} {size}")
                rows.append(_row(bits, "TX", f"{size} B {name}", frames, res, "in"))
        for size in (1514, 9014):
            host = _udp_frames(size, counts[size], real)
            for name, frames in (("compressed, " + real_src, [tx_frame(f) for f in host]),
                                 ("bypassed", host)):
                res = run_frames(rx, frames)
                _check(res.frames_out, [rx_frame(f) for f in frames], f"RX {bits} {name} {size}")
                rows.append(_row(bits, "RX", f"{size} B {name}", frames, res, "out"))
    return rows
