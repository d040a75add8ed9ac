"""A guarded process group dies with its owner, however the owner ends; a released one
does not."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# The owner: starts a sleeper in a group of its own, guards it (or guards and releases
# it), prints the sleeper's pid, then waits to be killed.
OWNER = textwrap.dedent("""
    import subprocess, sys, time
    from inceptionn.process_guard import guard_group, release
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    guard_group(p.pid)
    if sys.argv[1] == "release":
        release(p.pid)
    print(p.pid, flush=True)
    time.sleep(300)
""")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (not yet reaped by init) counts as gone.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][0] != "Z"


def _owner(mode):
    proc = subprocess.Popen([sys.executable, "-c", OWNER, mode], stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def _end(proc, sleeper):
    proc.kill()
    proc.wait()
    proc.stdout.close()
    try:
        os.kill(sleeper, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_gone(pid, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_group_dies_with_its_owner(sig):
    proc, sleeper = _owner("guard")
    try:
        assert _alive(sleeper)
        proc.send_signal(sig)
        proc.wait(10)
        assert _wait_gone(sleeper), "the guarded group outlived its owner"
    finally:
        _end(proc, sleeper)


def test_released_group_is_left_alone():
    proc, sleeper = _owner("release")
    try:
        time.sleep(0.3)          # the release has reached the watcher
        proc.kill()
        proc.wait(10)
        time.sleep(0.5)
        assert _alive(sleeper), "a released group was killed"
    finally:
        _end(proc, sleeper)


def test_the_watcher_outliving_its_owner_is_no_warning_at_exit():
    """The watcher runs on after its owner by design: the owner's exit says nothing of
    a subprocess still running (a Popen kept for it used to, in every test worker)."""
    code = textwrap.dedent("""
        import subprocess
        from inceptionn.process_guard import guard_group, release
        p = subprocess.Popen(["sleep", "30"], start_new_session=True)
        guard_group(p.pid)
        p.kill()
        p.wait()
        release(p.pid)
    """)
    out = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", code],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ResourceWarning" not in out.stderr and "still running" not in out.stderr, out.stderr
