"""The compiled engine loop (inceptionn/rtl/rtl_loop.py): bit-exact against golden, and the same
clock counts as the cocotb path on the same frames."""

from pathlib import Path

import pytest

from inceptionn import golden
from inceptionn.sim import engines
from inceptionn.rtl import frame_builders as F
from inceptionn.rtl.rtl_loop import FastEngine, run_frames
from inceptionn.rtl import rtl_golden   # golden configured as the RTL's ports


def _oversize():
    # A frame longer than the TX engine takes: it is dropped and counted.
    return F.udp_frame(bytes(golden.MAX_FRAME_BYTES - 41))


@pytest.mark.parametrize("k, codec, version", [(6, "paper", 1), (10, "paper", 1),
                                               (10, "bounded", 2), (16, "bounded", 3)])
def test_tx_then_rx_match_golden_across_batches(k, codec, version):
    """The TX loop's codec and version arguments (the software NIC's --codec, --version)
    in every wire version, RX accepting that version only."""
    frames = F.mixed_frames(seed=k, count=300) + [(_oversize(), False)]
    tx_c, rx_c = golden.Counters(), golden.Counters()
    tv = max(version, 2)                  # TX's version port (the paper's codec ignores it)
    want_wire = [rtl_golden.tx_frame(f, k=k, tuser=u, counters=tx_c, codec=codec, version=tv)
                 for f, u in frames]
    with FastEngine("tx", k=k, codec=codec, version=tv) as tx, \
            FastEngine("rx", versions=(version,)) as rx:
        # Two batches on one engine: state and counters carry over.
        got = tx.run(frames[:120]) + tx.run(frames[120:])
        assert [g and g[0] for g in got] == want_wire
        assert got[-1] is None and tx.counters()["dropped"] == 1
        assert tx.counters() == {n: v for n, v in tx_c.as_dict().items() if n in tx.counters()}
        wire = [g for g in got if g is not None]
        want_host = [rtl_golden.rx_frame(f, tuser=u, counters=rx_c, versions=(version,))
                     for f, u in wire]
        host = rx.run(wire)
        assert host == [(f, bool(b)) for f, b in want_host]
        assert rx.counters() == {n: v for n, v in rx_c.as_dict().items() if n in rx.counters()}
        assert all(lat > 0 for lat in tx.last.latencies + rx.last.latencies)
        assert tx.counters()[f"version{version}"] > 100
        assert rx.counters()[f"version{version}"] == rx.counters()["decompressed"] > 100


@pytest.mark.parametrize("kind, codec", [("tx", "paper"), ("rx", "bounded")])
def test_clock_counts_equal_the_cocotb_path(kind, codec):
    frames = [f for f, _ in F.mixed_frames(seed=7, count=40)]
    if kind == "rx":
        frames = [w for w in (rtl_golden.tx_frame(f, codec=codec) for f in frames) if w is not None]
    fast = run_frames(kind, frames, codec=codec)
    slow = engines.run_frames(kind, frames, codec=codec, tag=f"rtl_loop_{kind}")
    assert fast.frames_out == slow.frames_out
    assert (fast.cycles, fast.in_cycles, fast.in_beats, fast.out_beats) == \
           (slow.cycles, slow.in_cycles, slow.in_beats, slow.out_beats)
    assert fast.latencies == slow.latencies
    assert fast.counters == slow.counters


def test_bad_arguments_and_closed_engine():
    with pytest.raises(ValueError, match="dscp"):
        FastEngine("tx", dscp=64)
    with pytest.raises(ValueError, match="kind"):
        FastEngine("loopback")
    with pytest.raises(ValueError, match="codec"):
        FastEngine("tx", codec="fast")
    eng = FastEngine("rx")
    with pytest.raises(ValueError, match="at least one byte"):
        eng.run([b""])
    eng.close()
    with pytest.raises(RuntimeError, match="closed"):
        eng.run([F.arp_frame()])


@pytest.mark.parametrize("kind", ["tx", "rx"])
def test_models_name_their_verilog_from_the_build_folder(kind):
    # Verilator writes the Verilog's path into the model's C++; an absolute one made every
    # model a ccache miss in a clone at another path. The cocotb models and the compiled
    # loop both hand it the name from the build folder they run in.
    from inceptionn.rtl import harness
    from inceptionn.rtl.designs import DESIGNS
    from inceptionn.rtl.rtl_loop import build_loop
    name, factory, _ = DESIGNS[kind]
    loop = build_loop(kind)[0].parent
    model = harness.build(factory, name).build_dir
    cpp = list(model.glob("*.cpp"))
    assert cpp, f"no generated C++ in {model}"
    for f in cpp:
        text = f.read_text(errors="replace")
        assert str(harness.BUILD.resolve()) not in text, f"{f} names the build folder"
    assert any(f'"{name}.v"' in f.read_text(errors="replace") for f in cpp), model
    # The loop is that model, linked (one Verilator run and C++ compile per engine).
    assert not list(loop.glob("Vtop*.cpp"))
    assert f"{Path(model).resolve()}/Vtop__ALL.a" in (loop / "loop.mk").read_text()


def test_engines_from_two_threads_at_once():
    """The demo runs two captures' engine loops from two threads. Each loop's build reads
    the shared runtime's name from MAKEFLAGS, which the other thread's model build sets for
    its make: unlocked, a loop linked against a runtime that was not there and failed."""
    from concurrent.futures import ThreadPoolExecutor

    from inceptionn.rtl.rtl_loop import build_loop
    with ThreadPoolExecutor(2) as pool:
        for exe, counters in pool.map(build_loop, ["tx", "rx"] * 4):
            assert exe.exists() and counters
