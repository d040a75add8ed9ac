"""The layers, read from the source's imports: the product never imports the testbenches
(inceptionn.sim), and the library (everything but inceptionn/commands/) never imports a
command module, so a command can be added or removed without touching the library."""

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# package name of each source folder (pyproject's package-dir), for resolving relative imports
FOLDER_PACKAGE = {"inceptionn": "inceptionn", **{folder: package for package, folder in tomllib.loads(
    (REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].items()}}


# ---- static: the product does not import the testbenches ------------------------------

def _product_files():
    for folder in ["inceptionn", "golden", "hw", "drivers", "study", "examples"]:
        yield from sorted((REPO / folder).rglob("*.py"))


def _package_of(path):
    rel = path.relative_to(REPO)
    top = rel.parts[0]
    base = FOLDER_PACKAGE.get(top, top)
    parts = [base, *rel.parts[1:-1]]
    return ".".join(parts)


def _imports(source, pkg, filename="<source>"):
    """(line, module) for every import in `source`, relative ones resolved from `pkg`."""
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield node.lineno, mod
            for a in node.names:
                yield node.lineno, f"{mod}.{a.name}"


def test_product_does_not_import_the_testbenches():
    bad = []
    for path in _product_files():
        for line, mod in _imports(path.read_text(), _package_of(path), str(path)):
            if mod == "inceptionn.sim" or mod.startswith("inceptionn.sim."):
                bad.append(f"{path.relative_to(REPO)}:{line}: {mod}")
    assert not bad, "modules outside sim/ and tests/ import inceptionn.sim:\n" + "\n".join(bad)


def test_static_check_resolves_relative_imports():
    src = "from ..sim.rtl_loop import FastEngine\nfrom .. import sim\nimport inceptionn.sim.harness\n"
    mods = {m for _, m in _imports(src, _package_of(REPO / "drivers" / "nic_port.py"))}
    assert {"inceptionn.sim.rtl_loop", "inceptionn.sim", "inceptionn.sim.harness"} <= mods
    assert _package_of(REPO / "inceptionn" / "rtl" / "harness.py") == "inceptionn.rtl"




def _library_files():
    for path in _product_files():
        rel = path.relative_to(REPO)
        if rel.parts[0] in ("study", "examples") or rel.parts[:2] == ("inceptionn", "commands"):
            continue
        yield path


def test_the_library_does_not_import_the_commands():
    bad = []
    for path in _library_files():
        for line, mod in _imports(path.read_text(), _package_of(path), str(path)):
            if mod == "inceptionn.commands" or mod.startswith("inceptionn.commands."):
                bad.append(f"{path.relative_to(REPO)}:{line}: {mod}")
    # the one entry point: cli.py dispatches to the commands
    bad = [b for b in bad if not b.startswith("inceptionn/cli.py:")]
    assert not bad, "library modules import command modules:\n" + "\n".join(bad)


def test_the_check_sees_a_library_module_importing_a_command():
    src = "from .commands import demo\n"
    mods = {m for _, m in _imports(src, _package_of(REPO / "inceptionn" / "ddp_hook.py"))}
    assert "inceptionn.commands.demo" in mods


# ---- static: the command line is a leaf --------------------------------------------------

def _importers_of(module, folders):
    bad = []
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, mod in _imports(path.read_text(), _package_of(path), str(path)):
                if mod == module or mod.startswith(module + "."):
                    bad.append(f"{path.relative_to(REPO)}:{line}: {mod}")
    return bad


def test_nothing_in_the_product_imports_the_command_line_back():
    # cli.py imports the commands; a command (or the study, or the library) importing
    # cli.py back makes a circle. What commands share is in inceptionn/commands/args.py.
    bad = [b for b in _importers_of("inceptionn.cli", ["inceptionn", "golden", "hw", "drivers",
                                                       "study", "examples"])
           if not b.startswith("inceptionn/__main__.py")]
    assert not bad, "modules that import inceptionn.cli back:\n" + "\n".join(bad)


def test_the_circle_check_sees_a_command_importing_the_cli():
    mods = {m for _, m in _imports("from ..cli import CliError\n",
                                   _package_of(REPO / "inceptionn" / "commands" / "demo.py"))}
    assert "inceptionn.cli" in mods


# ---- static: a gradient's walk goes one way --------------------------------------------
# hook -> compressor/memory -> communicator -> ring schedule -> transport: a layer
# imports only the layers after it, so nothing below calls back up.

COLLECTIVES = "inceptionn.drivers.collectives"
ABOVE = {
    "transports": ("communicator", "compressed", "compressors", "hook", "hook_worker",
                   "hook_state", "hook_direct", "hook_options", "decide", "fp16"),
    "ring_schedule": ("transports", "communicator", "compressed", "compressors", "hook",
                      "hook_worker", "hook_state", "hook_direct", "hook_options"),
    "communicator": ("transports", "compressed", "hook", "hook_worker", "hook_state",
                     "hook_direct", "hook_options"),
}


def test_the_walk_never_calls_back_up():
    bad = []
    for layer, above in ABOVE.items():
        folder = REPO / "drivers" / "collectives"
        files = sorted((folder / layer).rglob("*.py")) if (folder / layer).is_dir() \
            else [folder / f"{layer}.py"]
        for path in files:
            for line, mod in _imports(path.read_text(), _package_of(path), str(path)):
                for name in above:
                    up = f"{COLLECTIVES}.{name}"
                    if mod == up or mod.startswith(up + "."):
                        bad.append(f"{path.relative_to(REPO)}:{line}: {mod}")
    assert not bad, "a lower layer of the exchange imports a higher one:\n" + "\n".join(bad)
