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

``beats/clk`` is the steady state: from the first beat of the frame a quarter of the way
into the batch to the last beat (the first frames fill the lanes: a frame alone crosses
one lane at 256 bits a clock); ``overall`` counts the whole batch from its first beat.
"""

import numpy as np

from .blocks import engines, lanes

__all__ = ["measure", "WIDTHS"]

# (beat bits, TX kind, RX kind): the engines and their lanes, as the registry names them.
WIDTHS = ((256, *engines()), (512, *lanes()))
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


def _steady(first, beats_per_frame, end_clock):
    """Beats a clock from the first beat of the frame a quarter of the way in to
    ``end_clock`` (the first frames fill the lanes: one frame alone crosses at 256 bits
    a clock)."""
    k = len(first) // 4
    return sum(beats_per_frame[k:]) / (end_clock - first[k] + 1)


def _run(kind, frames, enable, bits):
    """One batch through the compiled loop: (outputs, beats/clock overall and in steady
    state on the measured side, latency range)."""
    from .rtl_loop import FastEngine
    nb = bits // 8
    with FastEngine(kind, enable=enable) as eng:
        out = eng.run(frames)
        st = eng.last
    return out, st, nb


def _row(bits, engine, case, frames, out, st, nb):
    kept = [o for o in out if o is not None]
    if engine == "TX":
        beats = [-(-len(f) // nb) for f in frames]
        overall = st.in_beats / st.in_cycles
        steady = _steady(st.in_first, beats, st.in_last[-1])
    else:
        beats = [-(-len(f) // nb) for f, _ in kept]
        overall = st.out_beats / st.cycles
        steady = _steady(st.out_first, beats, st.last_out)
    lat = st.latencies
    print(f"  {engine} {bits} bits, {case}: {steady:.4f} beats/clock", flush=True)
    return {"engine": engine, "bits": bits, "case": case, "frames": len(frames),
            "side": "in" if engine == "TX" else "out",
            "beats/clk": round(steady, 4), "overall": round(overall, 4),
            "Gb/s @250MHz": round(steady * bits * CLOCK_MHZ / 1000, 1),
            "latency (clk)": f"{min(lat)}..{max(lat)}"}


def _check(got, want, what):
    """``want``: golden's frames (TX: bytes, None for a dropped one; RX: (bytes, tuser))."""
    want = [w if isinstance(w, tuple) else (w, False) for w in want if w is not None]
    if [g for g in got if g is not None] != want:
        raise AssertionError(f"RTL output differs from golden: {what}")


def measure(counts=None, widths=WIDTHS):
    """Rows {engine, bits, case, frames, rate, Gb/s, latency}; raises if a frame differs
    from golden."""
    from .frame_builders import gradient_values
    from .harness import BUILD
    from .rtl_golden import rx_frame, tx_frame
    counts = counts or {64: 256, 1514: 64, 9014: 24}
    synth, _ = gradient_values(200_000, seed=1, demo_dir=None)
    real, real_src = gradient_values(200_000, seed=2, demo_dir=BUILD / "demo")
    rows = []
    for bits, tx, rx in widths:
        for size, count in counts.items():
            cases = (("compressible", _udp_frames(size, count, synth), True),
                     ("fall-back", _fallback_frames(size, count), True),
                     ("bypassed", _udp_frames(size, count, synth), False))
            for name, frames, enable in cases:
                out, st, nb = _run(tx, frames, enable, bits)
                _check(out, [tx_frame(f, enable=enable) for f in frames],
                       f"TX {bits} {name} {size}")
                rows.append(_row(bits, "TX", f"{size} B {name}", frames, out, st, nb))
        for size in (1514, 9014):
            host = _udp_frames(size, counts[size], real)
            for name, frames in (("compressed, " + real_src, [tx_frame(f) for f in host]),
                                 ("bypassed", host)):
                out, st, nb = _run(rx, frames, True, bits)
                _check(out, [rx_frame(f) for f in frames], f"RX {bits} {name} {size}")
                rows.append(_row(bits, "RX", f"{size} B {name}", frames, out, st, nb))
    return rows
