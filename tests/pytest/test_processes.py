"""The helpers for latecomer's background processes (python_jobs/core/processes.py), on real processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from python_jobs.core import processes

# A leader that stops its own child on SIGTERM, as the warm driver stops its
# JVM (SIGKILL after two seconds); the child notes a SIGTERM in the file it is given.
LEADER = """
import signal, subprocess, sys, time
note = sys.argv[1]
child_code = (
    "import signal, sys, time\\n"
    "def noted(*_):\\n"
    "    open(sys.argv[1], 'w').write('child got SIGTERM'); sys.exit(1)\\n"
    "signal.signal(signal.SIGTERM, noted)\\n"
    "print('ready', flush=True); time.sleep(300)\\n"
)
child = subprocess.Popen([sys.executable, "-c", child_code, note], stdout=subprocess.PIPE, text=True)
child.stdout.readline()
def leave(*_):
    try:
        child.wait(timeout=2)  # the child's own SIGTERM, if it got one
    except subprocess.TimeoutExpired:
        child.kill(); child.wait()
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
print(child.pid, flush=True)
time.sleep(300)
"""
# A child that ignores SIGTERM: only SIGKILL ends it.
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(300)"
)


def start(code: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """A process leading a group of its own, as latecomer starts its servers; its first line."""
    command = [sys.executable, "-c", code, *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def test_a_pid_counts_while_alive_and_running_what_was_started() -> None:
    process, _ = start("import time; print('ready', flush=True); time.sleep(300)")
    try:
        assert processes.process_alive(process.pid)
        assert processes.runs(process.pid, "time.sleep(300)")
        assert not processes.runs(process.pid, "org.apache.spark.deploy.master.Master")
    finally:
        process.kill()
        process.wait()
    assert not processes.process_alive(process.pid)
    assert not processes.runs(process.pid, "time.sleep(300)"), "a gone pid runs nothing"


def test_an_exited_child_is_not_alive_before_it_is_reaped() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.05)
    assert not processes.process_alive(process.pid), "a zombie is not alive"


@pytest.mark.parametrize("leader_first", [True, False])
def test_terminate_asks_the_leader_alone_or_the_whole_group(tmp_path: Path, leader_first: bool) -> None:
    note = tmp_path / "child.txt"
    leader, child = start(LEADER, str(note))
    processes.terminate(leader.pid, timeout_s=10, leader_first=leader_first)
    assert not processes.process_alive(leader.pid)
    assert not processes.process_alive(int(child))
    # Asked alone, the leader stopped its child itself; asked as a group, the child got the SIGTERM too.
    assert note.exists() is not leader_first


def test_terminate_kills_what_ignores_sigterm() -> None:
    process, _ = start(STUBBORN)
    started = time.monotonic()
    processes.terminate(process.pid, timeout_s=1)
    assert not processes.process_alive(process.pid)
    # Gone only after the SIGTERM's second of grace: the SIGKILL ended it.
    assert 1 <= time.monotonic() - started < 10


def test_log_tail_reads_from_the_offset_and_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("an earlier start\n")
    offset = log.stat().st_size
    with log.open("a") as out:
        out.writelines(f"line {n}\n" for n in range(30))
    assert processes.log_tail(log, offset, lines=3) == "line 27\nline 28\nline 29"
    assert processes.log_tail(log, offset).splitlines() == [f"line {n}" for n in range(10, 30)]
    assert "an earlier start" in processes.log_tail(log, lines=40)
    assert processes.log_tail(tmp_path / "missing.log") == ""
