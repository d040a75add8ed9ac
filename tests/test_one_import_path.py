"""Each module has one name. The top-level folders are the package's subpackages by
pyproject's package-dir (golden/ is inceptionn.golden), not by links in inceptionn/; from
the checkout's root a folder's own name (`import golden`) fails, and pytest loads the test
modules of those folders by their package names (conftest.py)."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
PACKAGE_DIR = SETUPTOOLS["package-dir"]          # {"inceptionn.hw": "hw", ...}


def test_no_symbolic_links():
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.splitlines()
    links = [line.split("\t", 1)[1] for line in tracked if line.startswith("120000 ")]
    links += [str(p.relative_to(REPO)) for p in (REPO / "inceptionn").iterdir() if p.is_symlink()]
    assert not links, f"symbolic links in the tree: {links}"
    for package, folder in PACKAGE_DIR.items():
        shadow = REPO / Path(*package.split("."))
        assert not shadow.exists(), f"{shadow.relative_to(REPO)} beside {folder}/ (package-dir)"


def _folder_of(package):
    for mapped, top in PACKAGE_DIR.items():
        if package == mapped or package.startswith(mapped + "."):
            return REPO / top / Path(*package.split(".")[mapped.count(".") + 1:])
    return REPO / Path(*package.split("."))


def test_every_package_folder_is_listed():
    # A folder with an __init__.py left out of pyproject's list is missing from the wheel.
    folders = [REPO / "inceptionn", *(REPO / top for top in PACKAGE_DIR.values())]
    found = {init.parent for f in folders for init in f.rglob("__init__.py")}
    listed = {_folder_of(p) for p in SETUPTOOLS["packages"]}
    assert sorted(found - listed) == []
    assert [f for f in sorted(listed) if not f.is_dir()] == []


# From the checkout's root, as `python -m ...` and pytest run: pytest collects one sim/
# file, then each folder's own name is tried.
_PROBE = r"""
import importlib, json, sys
import pytest
pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
             "sim/test_tag_decoder.py"])
loaded = sorted(n for n in sys.modules if n.endswith("test_tag_decoder"))
second = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        second.append(name)
    except ImportError:
        pass
import inceptionn.golden.api
print("PROBE " + json.dumps({"loaded": loaded, "second": second,
                             "api": inceptionn.golden.api.__file__}))
"""


def test_a_module_has_one_name():
    names = [*PACKAGE_DIR.values(), "golden.api", "hw.wire", "sim.axis", "drivers.sockets"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *names], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    probe = json.loads(proc.stdout.rsplit("PROBE ", 1)[1])
    assert probe["loaded"] == ["inceptionn.sim.test_tag_decoder"], probe
    assert probe["second"] == [], f"importable under a second name: {probe['second']}"
    assert Path(probe["api"]) == REPO / "golden" / "api.py"
