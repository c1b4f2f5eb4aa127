"""Every descendant of a command ends with it: a child under /bin/sh, a daemon in its own
session, one that holds the host lease's descriptor, whether the worker lives on or is
SIGKILLed mid-command (then its watch ends them)."""

import json
import os
import time
from pathlib import Path

import pytest

from tests.faults.harness import commands_of, descendants_gone, kill, lab, wait_for_command
from tests.support.waits import eventually
from workers import descendants

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("cgroups", ["writable", "read-only"])
def test_a_daemon_ends_with_its_command_and_frees_the_host_lease(tmp_path: Path, cgroups: str,
                                                                 matrix: list[dict]) -> None:
    if cgroups == "writable" and not _cgroups_writable():
        pytest.skip("no writable cgroup v2 here: the read-only case is this host's")
    if cgroups == "read-only" and _cgroups_writable() and os.geteuid() != 0:
        pytest.skip("a mount namespace with a read-only cgroup v2 needs root")
    with lab(tmp_path) as lab_:
        worker = lab_.fleet.start("cpu", "w1", wrap=() if cgroups == "writable" else _ro())
        # Each cell's command leaves a daemon holding the host lease: on a worker that did not
        # end it, the second cell would wait for the lock for ever.
        sweep_id = lab_.sweep("daemon", recipe="leaves-a-daemon", n=2)
        took = lab_.wait(sweep_id, deadline_s=60)
        lab_.verify(sweep_id)
        assert {s.status for s in lab_.store.states(sweep_id).values()} == {"done"}
        outs = sorted((Path(lab_.settings.artifacts) / sweep_id).glob("*/attempt-1/out"))
        daemons = [int((out / "daemon.pid").read_text()) for out in outs]
        assert len(daemons) == 2 and descendants_gone(daemons)
        for out in outs:
            assert _inherited(out / "fds.json") == ["/dev/null", "host lease", "stderr",
                                                     "stdout"]
        worker.terminate()
        stopped_at = time.monotonic()
        assert worker.wait(timeout=30) == 0
        stop_s = time.monotonic() - stopped_at
        log = (lab_.root / "logs" / "worker-w1-cpu.log").read_text()
        assert ("as their subreaper" in log) == (cgroups == "read-only")
    how = "its cgroup killed" if cgroups == "writable" else "the worker, its subreaper, kills it"
    matrix.append({"fault": f"a command leaves a daemon (`setsid … &` under /bin/sh) that "
                   f"inherits the host lease's descriptor; cgroup v2 {cgroups}",
                   "outcome": f"the daemon ends with its command ({how}); the next cell gets "
                   f"the host lease; SIGTERM stops the worker in {stop_s:.1f} s; a command "
                   "inherits no descriptor but its output files and the lease",
                   "recovery_s": round(took, 1)})


def test_sigkill_mid_command_leaves_no_descendant_once_restarted(tmp_path: Path,
                                                                 matrix: list[dict]) -> None:
    if not _cgroups_writable():
        pytest.skip("no writable cgroup v2 here: a SIGKILLed worker's daemon outlives it")
    with lab(tmp_path) as lab_:
        victim = lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("killed-shell", recipe="shell-with-children", n=1)
        (shell,) = wait_for_command(victim.pid, "setsid sleep 1001")
        sleepers = eventually(lambda: _two_children(shell), 30, "the shell's two sleepers")
        kill(victim)
        killed_at = time.monotonic()
        # Its watch kills the commands' cgroup: nothing waits for the worker's restart.
        eventually(lambda: descendants_gone([shell, *sleepers]), 30,
                   "no sleeper outlives its worker")
        swept_s = time.monotonic() - killed_at
        lab_.fleet.start("cpu", "w1")  # as the supervisor does
        lab_.wait(sweep_id)  # measured again, until its timeout ends it
    matrix.append({"fault": "SIGKILL of a worker whose command (/bin/sh) has a child and a "
                   "daemon in its own session", "outcome": "the shell, its child and the "
                   "daemon end with the worker (its watch kills its commands' cgroup); the "
                   "worker of that name, started again, measures the cell again",
                   "recovery_s": round(swept_s, 1)})


def _ro() -> tuple[str, ...]:
    """Start the worker in a mount namespace whose cgroup v2 is read-only, as in many
    containers; where there is none, it has no cgroup to use anyway."""
    mount = descendants.cgroup2_mount()
    if mount is None:
        return ()
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -o remount,bind,ro "$0" && exec "$@"', str(mount))


def _cgroups_writable() -> bool:
    own = descendants.own_cgroup()
    return own is not None and os.access(own, os.W_OK) and os.access(own / "cgroup.procs", os.W_OK)


def _two_children(pid: int) -> list[int]:
    children = commands_of(pid)
    return children if len(children) == 2 else []


def _inherited(path: Path) -> list[str]:
    """What the descriptors a command was given point at (a socket or pipe by its name)."""
    names = {"stdout.txt": "stdout", "stderr.txt": "stderr", "host.lock": "host lease"}
    return sorted(next((n for end, n in names.items() if target.endswith(end)), target)
                  for target in json.loads(path.read_text()).values())
