"""The product runs from an installed wheel, not from the source tree (what it may import
is checked in test_layering.py).

The wheel is built from a copy of the packaged folders (`pip wheel --no-deps
--no-build-isolation`), installed with `--no-deps --no-index` into a fresh venv in a
temporary directory, and the product's commands run with that venv's Python from a
temporary working directory. No network: the fresh venv sees the dependencies through one
.pth file that lists this environment's site-packages folders as plain paths (so no
editable-install hook in them runs); the wheel's own inceptionn, in the fresh venv's
site-packages, comes first on sys.path, and every run checks that no module was loaded
from the source tree.
"""

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

import pytest
from synthesis import needs_yosys

# Builds and installs a wheel into a fresh venv: make test-long.
pytestmark = pytest.mark.long

REPO = Path(__file__).resolve().parent.parent
# Folders mapped into the package (pyproject's package-dir) and what a build reads.
# The package's own folder and every folder pyproject's package-dir maps into it.
PACKAGED = ["inceptionn", *tomllib.loads((REPO / "pyproject.toml").read_text())
            ["tool"]["setuptools"]["package-dir"].values()]
BUILD_FILES = ["pyproject.toml", "README.md"]
# ---- the wheel, installed in a fresh venv --------------------------------------------

def _dev_site_dirs():
    """This environment's site-packages folders (the venv's own and any it chains to)."""
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    dirs += [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
    out = []
    for d in dirs:
        d = str(Path(d).resolve())
        # A venv inside the checkout (make setup's .venv) counts: only site-packages
        # folders are listed, never the source tree itself.
        if Path(d).is_dir() and d not in out:
            out.append(d)
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    t0 = time.monotonic()
    src = tmp / "src"
    src.mkdir()
    for name in PACKAGED:
        shutil.copytree(REPO / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    for name in BUILD_FILES:
        shutil.copy(REPO / name, src / name)
    dist = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(dist), str(src)], check=True, cwd=tmp)
    wheels = list(dist.glob("inceptionn-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # This environment's pip installs into the fresh venv (no network, no dependencies).
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--no-index", str(wheels[0])], check=True)
    Path(purelib, "zz_dev_dependencies.pth").write_text("\n".join(_dev_site_dirs()) + "\n")
    work = tmp / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "INCEPTIONN_BUILD", "VIRTUAL_ENV")}
    # Build outputs go to the working directory's build/, the default of an installed package.
    print(f"wheel built and installed in {time.monotonic() - t0:.1f} s")
    return {"py": py, "bin": venv / "bin", "purelib": Path(purelib), "work": work, "env": env,
            "wheel": wheels[0]}


# Run a product entry point in the fresh venv, then list every loaded module's file that
# lies in the source tree; `inceptionn` must come from the venv.
_RUNNER = r"""
import runpy, sys, json, os
mod, argv = sys.argv[1], sys.argv[2:]
sys.argv = [mod] + argv
rc = 0
try:
    if mod == "-c":
        exec(argv[0], {"__name__": "__main__"})
    else:
        runpy.run_module(mod, run_name="__main__", alter_sys=True)
except SystemExit as e:
    rc = e.code or 0
import inceptionn
repo = os.environ["CHECK_REPO"]
deps = tuple(d + os.sep for d in os.environ["CHECK_DEPS"].split(os.pathsep) if d)
def leaks(f):
    f = os.path.realpath(f)
    return f.startswith(repo + os.sep) and not f.startswith(deps)
leaked = sorted({m.__file__ for m in list(sys.modules.values())
                 if getattr(m, "__file__", None) and leaks(m.__file__)})
sims = sorted(n for n in sys.modules if n == "inceptionn.sim" or n.startswith("inceptionn.sim."))
print("CHECK " + json.dumps({"rc": rc, "inceptionn": inceptionn.__file__, "leaked": leaked, "sim": sims}))
"""


def _run(installed, *args, timeout=300):
    import json
    env = dict(installed["env"], CHECK_REPO=str(REPO),
               CHECK_DEPS=os.pathsep.join(_dev_site_dirs()))
    t0 = time.monotonic()
    proc = subprocess.run([str(installed["py"]), "-c", _RUNNER, *args], cwd=installed["work"],
                          env=env, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - t0
    print(f"{' '.join(args)[:60]}: {took:.1f} s")
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    check = json.loads(out.rsplit("CHECK ", 1)[1])
    assert check["rc"] == 0, out[-3000:] + proc.stderr[-3000:]
    assert Path(check["inceptionn"]).resolve().is_relative_to(installed["purelib"].resolve()), check
    assert check["leaked"] == [], check
    assert check["sim"] == [], check
    return out


def test_wheel_holds_every_packaged_source(installed):
    # Each packaged folder's Python files, at their place in the package (pyproject's
    # package-dir), so a folder left out of pyproject's list fails here.
    import zipfile
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    want = set()
    for name in PACKAGED:
        base = "inceptionn" if name == "inceptionn" else f"inceptionn/{name}"
        want |= {f"{base}/{p.relative_to(REPO / name).as_posix()}"
                 for p in (REPO / name).rglob("*.py") if "__pycache__" not in p.parts}
    assert want - names == set()
    assert "inceptionn/rtl/rtl_loop.cpp" in names
    assert {"inceptionn/hw/verilog/keys.json", "inceptionn/hw/verilog/inceptionn_tx.v",
            "inceptionn/hw/verilog/inceptionn_rx.v"} <= names
    assert not any(n.startswith("experiments/") for n in names)


def test_console_script(installed):
    proc = subprocess.run([str(installed["bin"] / "inceptionn"), "--help"], cwd=installed["work"],
                          env=installed["env"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "verilog" in proc.stdout or "usage" in proc.stdout


def test_verilog(installed):
    out_dir = installed["work"] / "verilog"
    # Not linted here: the bytes are checked equal to the checkout's, which
    # tests/test_verilog.py lints. One engine (half a minute of conversion each): every
    # source the other needs is checked packaged above, and bench hw below reuses this one.
    _run(installed, "inceptionn", "verilog", "-o", str(out_dir), "--no-lint", "--only", "tx")
    assert not (out_dir / "inceptionn_rx.v").exists()
    from inceptionn.commands import verilog
    for name, factory in [(n, f) for n, f in verilog.engine_factories() if n.endswith("_tx")]:
        text = (out_dir / f"{name}.v").read_text()
        assert f"module {name}(" in text
        assert text == verilog.generate(factory, name), f"{name}: the wheel's Verilog differs"
    # The installed package reads its shipped Verilog (its sources give the checkout's
    # keys), and a fresh conversion there, in another process, gives the shipped bytes:
    # the Verilog is reproducible and independent of where the package lives.
    fresh = installed["work"] / "fresh_tx.v"
    _run(installed, "-c",
         "from inceptionn.rtl import designs, harness, shipped\n"
         "assert shipped.stale() == [], shipped.stale()\n"
         "name, factory, _ = designs.DESIGNS['tx']\n"
         f"open({str(fresh)!r}, 'w').write(harness.convert_uncached(factory, name))\n")
    from inceptionn.rtl import shipped
    assert fresh.read_text() == (shipped.SHIPPED / "inceptionn_tx.v").read_text()


def test_vc709_tree(installed):
    out_dir = installed["work"] / "vc709"
    _run(installed, "inceptionn", "vc709", "-o", str(out_dir), "--no-engines")
    assert (out_dir / "top.v").exists() and (out_dir / "top.xdc").exists()


@needs_yosys
def test_synth_one_small_block(installed):
    out = installed["work"] / "synth" / "report.json"
    text = _run(installed, "inceptionn", "synth", "--only", "tag_decoder", "-o", str(out))
    assert "tag_decoder" in text and out.exists()


@pytest.mark.skipif(os.environ.get("INCEPTIONN_STRESS", "0") in ("", "0"),
                    reason="a second cold C++ build of the TX loop (most of a minute): "
                    "make sim-stress; make test builds it from the checkout (sim/test_rtl_loop.py)")
def test_bench_hw_tx_builds_the_loop_from_the_packaged_source(installed):
    # `make bench-hw`'s TX half: the installed package builds the compiled loop from its
    # own C++ source under ./build and checks every output frame against golden. One
    # engine is enough here: the RX loop is the same source and the same build function
    # (both run from the checkout in sim/test_rtl_loop.py), and each cold build is most
    # of a minute of C++. That the package holds the loop's C++ source is checked in
    # make test (test_wheel_holds_every_packaged_source).
    text = _run(installed, "inceptionn", "bench", "hw", "--only", "tx", timeout=600)
    assert "input beats / clock" in text
    assert (installed["work"] / "build" / "rtl_loop" / "inceptionn_tx").is_dir()
