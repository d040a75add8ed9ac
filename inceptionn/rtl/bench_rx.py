"""RX DecompressionEngine on Verilator: output rate and latency on compressed frames.

Measured here (cycle-accurate, every number from this run):
- output beats per clock for back-to-back 1514- and 9014-byte original frames (UDP
  payloads of 1472 and 8972 bytes of real gradients, or N(0, 1e-3) when the demo's
  .npy files are absent) compressed by the golden TX in every wire format version:
  the paper's codec (version 1) at 2^-6, 2^-8, 2^-10, the bounded codec in version 2
  at 2^-8, 2^-10, 2^-16 and in version 3 (the checked shim) at 2^-8, 2^-10, 2^-16; RX
  accepting that version; input always valid, sink always ready. One beat is 32 bytes = 8 float32 = one group.
- latency: for one frame alone, the clocks from its first input beat to its last
  output beat minus its output beats, i.e. the clocks not spent emitting (the
  first-beat latency, as the output then streams without a gap), and the clocks from
  the frame's first input beat to its first output beat (the latency reported
  everywhere else).
Every output frame is also checked against golden.rx_frame.

``TWO_GROUPS``: where the two-groups-per-clock measurement is.
"""

import numpy as np

__all__ = ["measure", "TWO_GROUPS"]

TWO_GROUPS = (
    "2 groups/clock: built and measured separately, see docs/rx-two-groups.md "
    "(experiments/two_group_unit.py: bit-exact, 2.0 groups/clock up to ~9 bytes/group, but 23k "
    "LUTs for the unit alone and 8 LUT levels in its step loop, before the 512-bit "
    "output side an engine would also need)."
)


def _frames(size, count, seed=0):
    from . import frame_builders as F
    from .harness import BUILD
    payload = size - 42              # Ethernet 14 + IPv4 20 + UDP 8
    vals, source = F.gradient_values(count * payload // 4 + 1, seed=seed,
                                     demo_dir=BUILD / "demo")
    raw = F.float_payload(vals)
    return [F.udp_frame(raw[i * payload:(i + 1) * payload]) for i in range(count)], source


CASES = (("paper", 6, 1), ("paper", 8, 1), ("paper", 10, 1), ("bounded", 8, 2),
         ("bounded", 10, 2), ("bounded", 16, 2), ("bounded", 8, 3), ("bounded", 10, 3),
         ("bounded", 16, 3))


def measure(sizes=(1514, 9014), cases=CASES, counts=None):
    """Rows of output beats/clock and latency per (codec, k, version); raises if any
    frame differs from golden."""
    from .rtl_golden import rx_frame, tx_frame      # golden as the RTL's ports
    from .rtl_loop import run_frames
    counts = counts or {1514: 48, 9014: 10}
    rows = []
    for size in sizes:
        host, source = _frames(size, counts.get(size, 10))
        for codec, k, version in cases:
            acc = (version,)
            wire = [tx_frame(f, k=k, codec=codec, version=max(version, 2)) for f in host]
            expect = [rx_frame(w, versions=acc) for w in wire]
            train = run_frames("rx", wire, versions=acc)
            if train.frames_out != expect:
                raise AssertionError(f"RX output differs from golden ({size} B, {codec} k={k})")
            one = run_frames("rx", wire[:1], versions=acc)
            if one.frames_out != expect[:1]:
                raise AssertionError(f"RX output differs from golden ({size} B, {codec} k={k}, single)")
            wire_bytes = float(np.mean([len(w) for w in wire]))
            rows.append({
                "frame B": size,
                "version": version,
                "codec": codec,
                "bound": f"2^-{k}",
                "frames": len(wire),
                "wire B/frame": round(wire_bytes, 1),
                "in beats": train.in_beats,
                "out beats": train.out_beats,
                "cycles": train.cycles,
                "out beats/clk": round(train.out_beats / train.cycles, 4),
                "in beats/clk": round(train.in_beats / train.cycles, 4),
                "1-frame first-beat latency": one.cycles - one.out_beats,
                "first-in -> first-out": one.latencies[0] if one.latencies else None,
                "payload": source,
            })
    return rows
