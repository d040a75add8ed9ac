"""The engines are named once, in the block registry (inceptionn/rtl/blocks.py): no other
product module names an engine's class or Verilog module, and every reader of the
registry (the runs, `inceptionn verilog`, synthesis, the architecture pages, the Corundum
app and install, the testbenches) covers every engine it lists."""

import ast
from pathlib import Path

from inceptionn.rtl import blocks

REPO = Path(__file__).resolve().parent.parent
REGISTRY = REPO / "inceptionn" / "rtl" / "blocks.py"
# Where the engines' classes are defined (and so named): hw/<module>.py of their rows.
_ROWS = [*blocks.engines().values(), *blocks.lanes().values()]


def _defining_files():
    return {REPO / "hw" / (row.module.replace(".", "/") + ".py") for row in _ROWS}


def _product_files():
    for folder in ["inceptionn", "golden", "hw", "sim", "drivers", "study", "examples"]:
        yield from sorted((REPO / folder).rglob("*.py"))


def listings(source, classes, names, filename="<source>"):
    """(line, what) for each place `source` names an engine: one of `classes` as an
    identifier or an import, or one of the Verilog module `names` (or its .v file) as a
    string of its own."""
    files = {n + ".v" for n in names}
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Name) and node.id in classes:
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute) and node.attr in classes:
            yield node.lineno, node.attr
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name in classes:
                    yield node.lineno, f"import {a.name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and (node.value in names or node.value in files):
            yield node.lineno, repr(node.value)


def test_no_module_but_the_registry_lists_an_engine():
    classes = {row.cls for row in _ROWS}
    names = {row.name for row in _ROWS}
    allowed = {REGISTRY} | _defining_files()
    bad = []
    for path in _product_files():
        if path.resolve() in {p.resolve() for p in allowed}:
            continue
        for line, what in listings(path.read_text(), classes, names, str(path)):
            bad.append(f"{path.relative_to(REPO)}:{line}: {what}")
    assert not bad, ("engines named outside inceptionn/rtl/blocks.py (read them through "
                     "blocks.engines(), engine_classes(), lanes() or rtl.designs):\n"
                     + "\n".join(bad))


def test_the_check_sees_a_second_list():
    src = ('from ..hw.compression_engine import CompressionEngine\n'
           'ENGINES = {"tx": hw.DecompressionEngine}\nFILES = ["inceptionn_rx.v"]\n'
           'NAME = "inceptionn_tx"\nDOC = "inceptionn_tx.v, the TX engine"\n')
    found = [w for _, w in listings(src, {"CompressionEngine", "DecompressionEngine"},
                                    {"inceptionn_tx", "inceptionn_rx"})]
    assert sorted(found) == sorted(["import CompressionEngine", "DecompressionEngine",
                                    "'inceptionn_rx.v'", "'inceptionn_tx'"])


def test_the_registry_names_each_engine_and_its_lanes():
    eng, lanes = blocks.engines(), blocks.lanes()
    assert list(eng) == ["tx", "rx"] and list(lanes) == ["tx512", "rx512"]   # TX first
    assert {row.lanes_of for row in lanes.values()} == set(eng)
    assert all(row.engine and row.wrap for row in eng.values())
    kinds = [row.kind for row in blocks.BLOCKS if row.kind]
    assert len(kinds) == len(set(kinds)) == len(eng) + len(lanes)


def test_every_reader_covers_every_engine():
    from inceptionn.commands import architecture, verilog
    from inceptionn.hw.corundum import app, regmap
    from inceptionn.hw.corundum import install as corundum
    from inceptionn.rtl import designs, synthesis
    from inceptionn.sim import corundum_app, engines as sim_engines
    eng, lanes = blocks.engines(), blocks.lanes()
    names = [row.name for row in eng.values()]
    classes = blocks.engine_classes()
    assert [c.__name__ for c in classes.values()] == [row.cls for row in eng.values()]
    # the runs, and the testbenches' runner on top of them
    for kind, row in {**eng, **lanes}.items():
        assert designs.DESIGNS[kind][0] == row.name
        assert sim_engines.DESIGNS[kind][:2] == designs.DESIGNS[kind][:2]
    assert [n for n, _ in designs.engine_designs()] == names
    assert [n for n, _ in corundum_app.ENGINES] == names
    # Verilog, synthesis, the architecture pages
    assert [n for n, _ in verilog.engine_factories()] == names
    assert [d[0] for d in synthesis.DESIGNS if d[4]] == names
    assert {v[0] for v in synthesis.LANE_DESIGNS.values()} == set(lanes)
    assert architecture.ENGINES == classes
    # the Corundum app and its install
    assert regmap.ENGINES == classes
    assert app.ENGINE_MODULES == dict(zip(eng, names))
    assert [f for f in corundum._app_files("r") if f.endswith(tuple(n + ".v" for n in names))] \
        == [f"r/{n}.v" for n in names]
