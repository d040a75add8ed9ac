"""tools/install.py: pip's settings handed to uv as pip would apply them, and pip doing
the install where uv cannot."""

import importlib.util
import subprocess
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "install_tool", Path(__file__).resolve().parents[1] / "tools" / "install.py")
install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install)

LISTING = """\
:env:.default-timeout='180'
:env:.find-links='/wheels/env'
global.cert='/certs/ca.crt'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///mirror/a/simple file:///mirror/b/simple'
global.find-links='/wheels/global'
user.index-url='https://example.org/simple'
"""


def test_settings_take_the_overriding_source_and_split_lists():
    s = install.pip_settings(LISTING)
    assert s["find-links"] == ["/wheels/env"]                  # PIP_FIND_LINKS over the file
    assert s["extra-index-url"] == ["file:///mirror/a/simple", "file:///mirror/b/simple"]
    assert s["constraint"] == ["/etc/pip/constraints.txt"]
    assert s["index-url"] == ["https://example.org/simple"]
    assert "default-timeout" not in s                          # decides nothing installed


def test_uv_arguments_carry_every_setting():
    args, env = install.uv_arguments(install.pip_settings(LISTING))
    pairs = list(zip(args[::2], args[1::2]))
    assert ("--index-strategy", "unsafe-best-match") in pairs  # pip's rule across indexes
    assert ("--constraint", "/etc/pip/constraints.txt") in pairs
    assert ("--extra-index-url", "file:///mirror/a/simple") in pairs
    assert ("--extra-index-url", "file:///mirror/b/simple") in pairs
    assert ("--find-links", "/wheels/env") in pairs and ("--find-links", "/wheels/global") not in pairs
    assert ("--index-url", "https://example.org/simple") in pairs
    assert env == {"SSL_CERT_FILE": "/certs/ca.crt"}
    args, _ = install.uv_arguments(install.pip_settings("global.no-index='true'\n"))
    assert "--no-index" in args


def test_pip_installs_where_uv_fails(monkeypatch, capsys):
    calls = []

    def run(cmd, check=False, **kw):
        calls.append(cmd)
        if cmd[1:4] == ["-m", "pip", "config"]:
            return subprocess.CompletedProcess(cmd, 0, stdout=LISTING)
        if "uv" in cmd[:3] or any(str(c).startswith("uv==") for c in cmd):
            raise subprocess.CalledProcessError(1, cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(install.subprocess, "run", run)
    assert install.main(["-e", ".[dev]"]) == 0
    assert calls[-1][1:] == ["-m", "pip", "install", "-q", "--no-compile", "-e", ".[dev]"]
    assert "installing with pip" in capsys.readouterr().err


def test_no_spec_is_a_usage_error(capsys):
    assert install.main([]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.parametrize("line", ["not a setting", "global.timeout='5'", "x.find-links='/w'"])
def test_other_lines_are_left_out(line):
    assert install.pip_settings(line) == {}
