"""Every module is imported by its package name (inceptionn.study, inceptionn.bench, ...):
no command, benchmark, study module, example or test edits sys.path to reach another."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def path_edits(source, filename="<source>"):
    """Lines of `source` that change sys.path: a call of one of its methods that adds or
    removes entries, or an assignment to it or to a slice of it."""
    def is_sys_path(node):
        return (isinstance(node, ast.Attribute) and node.attr == "path"
                and isinstance(node.value, ast.Name) and node.value.id == "sys")
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and is_sys_path(node.func.value) \
                and node.func.attr in ("insert", "append", "extend", "remove", "pop", "clear"):
            yield node.lineno
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if is_sys_path(t) or isinstance(t, ast.Subscript) and is_sys_path(t.value):
                    yield node.lineno


def _files():
    for folder in ("inceptionn", "study", "examples"):
        yield from sorted((REPO / folder).rglob("*.py"))
    yield from sorted((REPO / "tests").glob("test_*.py"))


def test_nothing_edits_sys_path():
    bad = [f"{p.relative_to(REPO)}:{line}" for p in _files()
           for line in path_edits(p.read_text(), str(p))]
    assert not bad, "sys.path edited (import by package name instead):\n" + "\n".join(bad)


def test_the_check_sees_each_kind_of_edit():
    src = ("import sys\nsys.path.insert(0, 'x')\nsys.path.append('y')\nsys.path[:0] = ['z']\n"
           "sys.path += ['w']\nprint(sys.path)\nother.path.insert(0, 'v')\n")
    assert sorted(path_edits(src)) == [2, 3, 4, 5]
