"""No ToS or DSCP number in the product outside the wire-constant modules (golden/wire.py,
hw/wire.py): a DSCP given as a literal (a parameter's default, a keyword argument, a
dscp/tos name bound to a number) or the ToS bytes 0x28 / 0x2C written out. Docstrings,
comments and help texts may name them."""

import ast
import io
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ["inceptionn", "golden", "hw", "drivers", "study", "examples"]
WIRE = {REPO / "golden" / "wire.py", REPO / "hw" / "wire.py"}
NAMES = ("dscp", "tos")


def _named(name):
    return name is not None and any(n in name.lower() for n in NAMES)


def _int_literal(node):
    # 0 is "no tag" (best effort), not a DSCP of the wire format
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value != 0


def offences(source, filename="<source>"):
    """(line, what) for every DSCP or ToS literal in `source`."""
    out = []
    tree = ast.parse(source, filename=filename)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            pos = a.posonlyargs + a.args
            for arg, default in zip(pos[len(pos) - len(a.defaults):], a.defaults):
                if _named(arg.arg) and _int_literal(default):
                    out.append((default.lineno, f"default {arg.arg}={default.value}"))
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                if default is not None and _named(arg.arg) and _int_literal(default):
                    out.append((default.lineno, f"default {arg.arg}={default.value}"))
        elif isinstance(node, ast.keyword) and _named(node.arg) and _int_literal(node.value):
            out.append((node.value.lineno, f"keyword {node.arg}={node.value.value}"))
        elif isinstance(node, ast.Assign) and _int_literal(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name) and _named(t.id):
                    out.append((node.lineno, f"{t.id} = {node.value.value}"))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NUMBER and tok.string.lower() in ("0x28", "0x2c"):
            out.append((tok.start[0], f"ToS byte {tok.string}"))
    return sorted(out)


def test_no_tos_or_dscp_numbers_outside_the_wire_constants():
    bad = []
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path in WIRE:
                continue
            for line, what in offences(path.read_text(), str(path)):
                bad.append(f"{path.relative_to(REPO)}:{line}: {what}")
    assert not bad, "use golden.wire / hw.wire constants:\n" + "\n".join(bad)


def test_the_check_sees_each_kind_of_literal():
    src = ("def f(x, dscp=10): pass\n"
           "g(tos=0x28)\n"
           "DSCP_OTHER = 11\n"
           "m = Mux(a, 0x2C, b)\n"
           "h(dscp=DSCP_DEFAULT, tos=0)\n")
    assert offences(src) == [(1, "default dscp=10"), (2, "ToS byte 0x28"), (2, "keyword tos=40"),
                             (3, "DSCP_OTHER = 11"), (4, "ToS byte 0x2C")]
