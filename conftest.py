"""Where `make test`'s time goes: after the run, the seconds spent per folder and the
slowest test files (setup, call and teardown summed; with -n 2 these are worker
seconds, about twice the wall time), all of them in build/test-times.txt."""

import time
from pathlib import Path
from collections import defaultdict

_by_file: dict = defaultdict(float)
_start = time.monotonic()


def pytest_runtest_logreport(report):
    # Runs in the controller for every phase of every test, also under xdist.
    _by_file[report.nodeid.split("::")[0]] += getattr(report, "duration", 0.0) or 0.0


def pytest_terminal_summary(terminalreporter):
    if not _by_file:
        return
    tr = terminalreporter
    by_folder: dict = defaultdict(float)
    for path, secs in _by_file.items():
        by_folder[path.split("/")[0] if "/" in path else "."] += secs
    total = sum(by_folder.values())
    tr.section("where the time goes")
    tr.write_line(f"wall {time.monotonic() - _start:.0f} s; tests {total:.0f} worker-s")
    for folder, secs in sorted(by_folder.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"  {folder:<28} {secs:7.0f} s  {100 * secs / total:4.1f}%")
    tr.write_line("slowest files:")
    ranked = sorted(_by_file.items(), key=lambda kv: -kv[1])
    for path, secs in ranked[:12]:
        tr.write_line(f"  {path:<52} {secs:7.0f} s")
    # Every file, for whoever wants the whole picture (build/ is the outputs' folder).
    out = Path(__file__).resolve().parent / "build" / "test-times.txt"
    out.parent.mkdir(exist_ok=True)
    out.write_text("".join(f"{secs:8.1f}  {path}\n" for path, secs in ranked))
    tr.write_line(f"every file: {out.relative_to(out.parent.parent)}")
