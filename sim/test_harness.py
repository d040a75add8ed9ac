"""The model builds' shared pieces (inceptionn/rtl/harness.py): the C++ level of a model
and its build folder, and the precompiled Verilator headers every model compiles with
when no ccache is in use."""

import re
import shlex
import shutil
import subprocess

import pytest

from inceptionn.rtl import designs, harness


def _flop():
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    class Flop(wiring.Component):
        a: In(8)
        y: Out(8)

        def elaborate(self, platform):
            m = Module()
            m.d.sync += self.y.eq(self.a + 1)
            return m
    return Flop()


def test_the_model_level_names_its_folder(monkeypatch):
    monkeypatch.delenv("INCEPTIONN_MODEL_OPT", raising=False)
    sim = harness.BUILD / "sim"
    assert harness.model_dir(designs.rx_design, "rx") == sim / "rx"        # its own -O1
    assert harness.model_dir(_flop, "flop") == sim / "flop"                 # the default -O0
    monkeypatch.setenv("INCEPTIONN_MODEL_OPT", "-O0")
    assert harness.model_dir(designs.rx_design, "rx") == sim / "rx-O0"
    assert harness.model_dir(_flop, "flop") == sim / "flop"
    monkeypatch.setenv("INCEPTIONN_MODEL_OPT", "-O2")
    assert harness.model_dir(_flop, "flop") == sim / "flop-O2"
    for bad in ("O2", "-O9", "-O0 -g", "-include x"):
        monkeypatch.setenv("INCEPTIONN_MODEL_OPT", bad)
        with pytest.raises(ValueError, match="INCEPTIONN_MODEL_OPT"):
            harness.model_dir(_flop, "flop")


def test_a_model_compiles_with_the_shared_precompiled_headers(monkeypatch):
    """Without ccache a model's compile -includes the shared header, and GCC takes its
    .gch (``-H`` marks a used one with '!'; one it rejects, with 'x')."""
    monkeypatch.delenv("INCEPTIONN_MODEL_OPT", raising=False)
    monkeypatch.setenv("CCACHE_DISABLE", "1")
    # A fresh build: a model already built leaves no compile line in its log (a second
    # make test in the same tree failed here).
    shutil.rmtree(harness.model_dir(_flop, "pch_check"), ignore_errors=True)
    runner = harness.build(_flop, "pch_check")
    log = (harness.model_dir(_flop, "pch_check") / "build.log").read_text()
    line = next(x for x in log.splitlines() if "Vtop__ALL.cpp" in x and " -c " in x)
    m = re.search(r"-include (\S+vl_pch\.h)", line)
    assert m, f"no precompiled header in the model's compile line:\n{line}"
    gch = m.group(1) + ".gch"
    argv = [a for a in shlex.split(line) if a not in ("ccache", "-MMD")]
    argv = argv[:argv.index("-o")] + ["-fsyntax-only", "-H", "Vtop__ALL.cpp"]
    out = subprocess.run(argv, cwd=runner.build_dir, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"! {gch}" in out.stderr, out.stderr[:2000]


def test_a_model_above_O0_compiles_its_fast_half_at_its_level_and_the_rest_at_O0(monkeypatch):
    """The engines' models (cxx_opt -O1) compile as two units: the eval code at -O1, the
    construction and first settle at -O0 (half the C++ time of one unit at -O1)."""
    monkeypatch.delenv("INCEPTIONN_MODEL_OPT", raising=False)
    monkeypatch.setenv("CCACHE_DISABLE", "1")

    def fast_flop():
        return _flop()
    fast_flop.cxx_opt = "-O1"          # type: ignore[attr-defined]
    shutil.rmtree(harness.model_dir(fast_flop, "groups_check"), ignore_errors=True)
    runner = harness.build(fast_flop, "groups_check")
    log = (harness.model_dir(fast_flop, "groups_check") / "build.log").read_text()
    compiles = {m.group(2): m.group(1) for m in
                re.finditer(r"c\+\+ (-O\S+) .* -c (?:-o \S+ )?(Vtop__\w+\.cpp)", log)}
    assert compiles == {"Vtop__fast.cpp": "-O1", "Vtop__slow.cpp": "-O0"}, log[-3000:]
    fast = (runner.build_dir / "Vtop__fast.cpp").read_text()
    slow = (runner.build_dir / "Vtop__slow.cpp").read_text()
    assert '#include "Vtop___024root__0.cpp"' in fast and "__Slow" not in fast
    assert '#include "Vtop___024root__Slow.cpp"' in slow
    assert (runner.build_dir / "groups_check").exists()     # the linked model
