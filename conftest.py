"""Where `make test`'s time goes, and the order its files run in.

After the run: the seconds spent per folder and the slowest test files (setup, call and
teardown summed; with several workers these are worker-seconds) and their CPU seconds
(the test process's and its ended children's: builds, simulators, ranks; unlike wall
seconds, not inflated by whatever else the machine runs), every file in
build/test-times.txt and build/test-cpu.txt.

Before it: the files are put longest first. pytest-xdist hands whole files (`--dist
loadfile`, `--no-loadscope-reorder`) to workers in collection order, so the longest
ones start at once and the last minutes are not one engine testbench alone on one
worker. The times come from the last run here (build/test-times.txt), else from
tests/durations.txt (a fresh clone's run, kept in the tree: `make durations`); a file
in neither counts as short.
"""

import importlib
import os
import resource
import time
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
TIMES = ROOT / "build" / "test-times.txt"
DEFAULT_TIMES = ROOT / "tests" / "durations.txt"
_by_file: dict = defaultdict(float)
_cpu_by_file: dict = defaultdict(float)
_span: dict = {}        # file -> [first report, last report, worker], seconds from the start
_start = time.monotonic()


# ---- one import path ------------------------------------------------------------------
# pyproject's package-dir makes the top-level folders the package's subpackages (sim/ is
# inceptionn.sim), and each refuses any other name. pytest would name a test module by its
# folders (sim/test_x.py as `sim.test_x`); in those folders each is imported by its
# package name instead (inceptionn.sim.test_x, as the cocotb runner imports it).
PACKAGE_DIR = {ROOT / folder: package for package, folder in tomllib.loads(
    (ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].items()}


def module_name(path):
    """The module name of the file or folder `path` in a package-dir folder, else None."""
    path = Path(path)
    for folder, package in PACKAGE_DIR.items():
        if path.is_relative_to(folder):
            parts = [p.removesuffix(".py") for p in path.relative_to(folder).parts]
            return ".".join([package, *(p for p in parts if p != "__init__")])
    return None


class PackagedModule(pytest.Module):
    def _getobj(self):
        return importlib.import_module(module_name(self.path))


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    # Its test files, without the Package node that imports __init__.py by the folder's name.
    if module_name(path) is not None:
        return pytest.Dir.from_parent(parent, path=path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    if module_name(module_path) is not None:
        return PackagedModule.from_parent(parent, path=module_path)
    return None


def _read_times(path):
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            out[parts[1]] = float(parts[0])
    return out


# The end-to-end runs of minutes (the demo, training to an accuracy, the study, the
# Corundum app's model), the system runs of 5 to 20 s whose parts other tests cover and
# the stage testbenches (each stage runs inside an engine's testbench) are marked `long`:
# make test-long runs them (CI runs it after make test), so that make test stays near its
# 8 minutes on a fresh 2-core machine.
LONG = os.environ.get("INCEPTIONN_LONG", "0") not in ("", "0")
_LONG_SKIP = pytest.mark.skip(reason="left to make test-long (INCEPTIONN_LONG=1; docs/verification.md says why)")


def pytest_collection_modifyitems(items):
    if not LONG:
        for it in items:
            if it.get_closest_marker("long") is not None:
                it.add_marker(_LONG_SKIP)
    src = TIMES if TIMES.exists() else DEFAULT_TIMES
    times = _read_times(src) if src.exists() else {}
    # Stable: the tests of one file keep their order.
    items.sort(key=lambda it: -times.get(it.nodeid.split("::")[0], 0.0))


def _cpu_now():
    """CPU seconds of this process and of its children that have ended."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_cpu_last = [_cpu_now()]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Runs where the test runs (an xdist worker): the CPU seconds since the last phase,
    # simulators, builds and ranks included, ride on the report to the controller. Wall
    # seconds depend on what else the machine runs; these do not.
    outcome = yield
    now = _cpu_now()
    outcome.get_result().user_properties.append(("cpu_s", now - _cpu_last[0]))
    _cpu_last[0] = now


def pytest_runtest_logreport(report):
    # Runs in the controller for every phase of every test, also under xdist.
    path = report.nodeid.split("::")[0]
    _by_file[path] += getattr(report, "duration", 0.0) or 0.0
    _cpu_by_file[path] += dict(report.user_properties).get("cpu_s", 0.0)
    now = time.monotonic() - _start
    span = _span.setdefault(path, [now - (getattr(report, "duration", 0.0) or 0.0), now,
                                   getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)])
    span[1] = now


def pytest_terminal_summary(terminalreporter):
    if not _by_file:
        return
    tr = terminalreporter
    by_folder: dict = defaultdict(float)
    for path, secs in _by_file.items():
        by_folder[path.split("/")[0] if "/" in path else "."] += secs
    total = sum(by_folder.values())
    tr.section("where the time goes")
    cpu = sum(_cpu_by_file.values())
    tr.write_line(f"wall {time.monotonic() - _start:.0f} s; tests {total:.0f} worker-s, "
                  f"{cpu:.0f} CPU-s")
    for folder, secs in sorted(by_folder.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"  {folder:<28} {secs:7.0f} s  {100 * secs / total:4.1f}%")
    tr.write_line("slowest files:")
    ranked = sorted(_by_file.items(), key=lambda kv: -kv[1])
    for path, secs in ranked[:12]:
        tr.write_line(f"  {path:<52} {secs:7.0f} s {_cpu_by_file[path]:7.0f} CPU-s")
    # Every file, for whoever wants the whole picture (build/ is the outputs' folder).
    # Only a whole run's times replace the file the next run's order comes from (not a
    # run of some files, nor of one mark: make test-long's `-m long`).
    if tr.config.getoption("file_or_dir") in (None, []) and not tr.config.getoption("markexpr"):
        TIMES.parent.mkdir(exist_ok=True)
        TIMES.write_text("".join(f"{secs:8.1f}  {path}\n" for path, secs in ranked))
        (TIMES.parent / "test-cpu.txt").write_text("".join(
            f"{_cpu_by_file[path]:8.1f}  {path}\n" for path, _ in
            sorted(_cpu_by_file.items(), key=lambda kv: -kv[1])))
        # When each file ran, on which worker: where the workers wait at the end.
        (TIMES.parent / "test-timeline.txt").write_text("".join(
            f"{a:7.1f} {b:7.1f}  {w or '-':<4} {path}\n"
            for path, (a, b, w) in sorted(_span.items(), key=lambda kv: kv[1][0])))
        tr.write_line(f"every file: {TIMES.relative_to(ROOT)}; when each ran: "
                      f"build/test-timeline.txt")


def pytest_configure(config):
    """Stopping a run leaves nothing running. SIGTERM (what make passes on when it is
    stopped) unwinds like Ctrl-C, so fixtures and `finally` clean up, and the controller
    passes it on to its xdist workers. Each worker leads a process group of its own, which
    a watcher kills once the worker has ended by any means: simulators, solvers and ranks
    it started go with it (inceptionn/process_guard.py)."""
    import os
    import signal

    from inceptionn.process_guard import children, guard_group, kill_guarded

    worker = bool(os.environ.get("PYTEST_XDIST_WORKER"))

    def _interrupt(signum, frame):
        if worker:
            kill_guarded()           # a solver's step can take minutes: end it now
        else:
            for pid in children(os.getpid()):
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _interrupt)
    if worker:
        os.setpgid(0, 0)
        guard_group(os.getpid())
