"""A watched worker's commands are born inside its commands' cgroup (workers/births.py): the
worker's own children, in a session of their own, with the descriptors, signal dispositions,
directory and environment Popen would give them, and Popen's errors (its PATH search too) where
they cannot start; the worker never moves and starts no keeper. Only the first command after an
idle spell is born so: back to back, the worker moves. A watch killed between commands is
replaced; where the watch cannot clone into the cgroup, the worker moves for the spawn."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workers.test_deathwatch import cgroups_writable

pytestmark = pytest.mark.skipif(not cgroups_writable(), reason="no writable cgroup v2 here")

# In a process of its own: descendants and deathwatch keep the worker's state in the module.
WORKER = """
import json, os, signal, subprocess, sys, threading
from pathlib import Path
from jobs.spec.recipes import Invocation
from workers import deathwatch, descendants, execute

root = Path(sys.argv[1])
descendants.IDLE_AFTER_S = float(sys.argv[3])
how, _ = descendants.configure(root / "w")
assert how == "cgroup", how
# Ignored by the worker when it starts the watch, and no longer: the command must not inherit
# it from the watch. Ignored from then on, as under nohup: the command must keep ignoring it.
signal.signal(signal.SIGUSR2, signal.SIG_IGN)
assert deathwatch.start(descendants.cgroup() if sys.argv[2] == "cgroup" else root)
signal.signal(signal.SIGUSR2, signal.SIG_DFL)
for ignored in (signal.SIGHUP, signal.SIGUSR1):
    signal.signal(ignored, signal.SIG_IGN)
# Numbers above what the command opens itself (its listing of /proc/self/fd takes one).
kept = os.dup2(os.open(os.devnull, os.O_RDONLY), 40)  # inheritable, not passed: must not reach it
passed = os.dup2(os.open(os.devnull, os.O_RDONLY), 41)

def run(argv, cwd=root, timeout_s=30.0, pass_fds=(), path=None):
    env = {"ONLY": "this", **({"PATH": path} if path else {})}
    call = Invocation(argv=argv, env=env, timeout_s=timeout_s)
    files = execute.Files(root / "out.txt", root / "err.txt")
    ran = execute.run(execute.Command("measure", "m", call, Path(cwd), files, root,
                                      pass_fds=list(pass_fds)))
    return ran.exit_code, (root / "out.txt").read_text(), (root / "err.txt").read_text()

SELF = root / "self.py"
SELF.write_text(
    "import json, os\\n"
    "fds = sorted(map(int, os.listdir('/proc/self/fd')))\\n"
    "links = {n: os.readlink(f'/proc/self/fd/{n}') for n in fds\\n"
    "         if os.path.exists(f'/proc/self/fd/{n}')}\\n"
    "print(json.dumps([open('/proc/self/cgroup').read().split('::')[-1].strip(), os.getppid(),\\n"
    "    os.getpgid(0), os.getsid(0), os.getpid(), fds, dict(os.environ),\\n"
    "    os.readlink('/proc/self/fd/0'), os.getcwd(),\\n"
    "    [l for l in open('/proc/self/status') if l.startswith(('SigIgn', 'SigBlk'))],\\n"
    "    links, len(os.listdir(f'/proc/{os.getppid()}/task')), sorted(os.sched_getaffinity(0)),\\n"
    "    os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)]))\\n")
# Low numbers too, likely the very numbers the watch receives descriptors at.
low = [os.open(root / f"f{i}", os.O_CREAT | os.O_RDONLY) for i in range(6)]
descendants.warm()  # as the worker does at the take: no keeper, since the watch bears it
# Changed after the watch started, as a test's CPU hogs or a raised priority change a worker:
# the command takes the worker's as they are now, as a Popen child would.
os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 3)
code, out, err = run([sys.executable, str(SELF)], pass_fds=[passed, *low])
born = json.loads(out) if code == 0 else err
moved_first = descendants._pen.moved
popen = json.loads(subprocess.run([sys.executable, str(SELF)], pass_fds=[passed, *low], cwd=root,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  start_new_session=True, check=True).stdout)
# PATH searched as Popen searches it: a name it may not execute is passed over for a later
# one, and is the error said where none follows.
for d, mode in (("locked", 0o644), ("open", 0o755)):
    (root / d).mkdir()
    (root / d / "prog").write_text("#!/bin/sh\\necho " + d + "\\n")
    (root / d / "prog").chmod(mode)
searched = run(["prog"], path=f"{root}/locked:{root}/open")
locked = run(["prog"], path=f"{root}/locked:{root}/nothing")
watch = deathwatch.pid()
os.kill(watch, signal.SIGKILL)
os.waitpid(watch, 0)  # the watch is the worker's child: reaped here, as Popen would
after_kill = run(["true"]), deathwatch.pid() not in (None, watch)
watch = deathwatch.pid()
missing = run(["no-such-program-anywhere"])
same_watch = deathwatch.pid() == watch  # a command that cannot start costs no new watch
(root / "noshebang").write_text("echo hi\\n")
(root / "noshebang").chmod(0o755)
noexec = run([str(root / "noshebang")])
no_cwd = run(["true"], cwd=root / "gone")
timed_out = run(["sleep", "10"], timeout_s=0.2)
# A daemon left behind is ended without cgroup.kill, after which Linux would kill every child
# born into the cgroup: the next command is born all the same.
daemon = run(["sh", "-c", "setsid sleep 100 > /dev/null 2>&1 &"])
after_daemon = run(["true"])
bears = deathwatch.bears()
# A watch that dies with the request unanswered: the worker moves for the spawn instead.
watch, moved_before = deathwatch.pid(), descendants._pen.moved  # 0.0: none yet
os.kill(watch, signal.SIGSTOP)
threading.Timer(0.3, os.kill, (watch, signal.SIGKILL)).start()
mid_request = run(["true"]), descendants._pen.moved != moved_before
deathwatch.ensure()  # as before the next command: the dead watch reaped, a new one started
# A cgroup killed (as a predecessor's watch would): the kernel kills a child born into it, so
# the worker moves, this time and from then on.
(descendants.cgroup() / "cgroup.kill").write_text("1")
moved = descendants._pen.moved
killed_first = run(["true"]), descendants._pen.moved != moved, deathwatch.bears()
zombies = [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/stat")
           and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
           and int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) == os.getpid()]
print(json.dumps({
    "born": born, "pid": os.getpid(),
    "env": execute.child_env(Invocation(argv=["x"], env={"ONLY": "this"}, timeout_s=1)),
    "cgroup": "/" + str(descendants.cgroup().relative_to(descendants.cgroup2_mount())),
    "passed": passed, "kept": kept, "low": {n: str(root / f"f{i}") for i, n in enumerate(low)},
    "same_watch": same_watch, "noexec": noexec, "root": str(root),
    "missing": missing, "no_cwd": no_cwd, "timed_out": timed_out[0], "zombies": zombies,
    "bears": bears, "moved": descendants._pen.moved, "moved_first": moved_first,
    "popen": popen, "searched": searched, "locked": locked, "after_kill": after_kill,
    "mid_request": mid_request, "moved_before": moved_before, "daemon": daemon,
    "after_daemon": after_daemon, "killed_first": killed_first,
    "keepers": [t.name for t in threading.enumerate() if t.name != "MainThread"]}))
deathwatch.stop()
descendants.close()
"""


def _worker(tmp_path: Path, into: str, idle_after_s: float = 0.0) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path), into, str(idle_after_s)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_a_watched_command_is_born_inside_as_the_worker_s_child(tmp_path: Path) -> None:
    seen = _worker(tmp_path, "cgroup")
    born = seen["born"]
    assert isinstance(born, list), born
    cgroup, ppid, pgid, sid, pid, fds, env, stdin, cwd, signals, links, threads, *sched = born
    assert cgroup == seen["cgroup"]  # inside from its first instant: nobody moved it
    assert ppid == seen["pid"]  # the worker's child, though the watch started it
    assert pgid == sid == pid  # a session of its own, as start_new_session gives
    assert seen["passed"] in fds and seen["kept"] not in fds
    popen = seen["popen"]
    assert isinstance(popen, list)
    assert fds == popen[5]  # exactly Popen's descriptors: 0 to 2, the listing's, the passed
    assert signals == popen[9]  # nothing ignored or blocked that Popen's child would not have
    mask = int(next(line for line in signals if line.startswith("SigIgn")).split()[1], 16)
    assert [mask >> (n - 1) & 1 for n in (1, 10, 12)] == [1, 1, 0]  # SIGHUP, SIGUSR1; SIGUSR2
    low = seen["low"]
    assert isinstance(low, dict)
    assert {n: links[n] for n in low} == low  # each passed descriptor where it was passed
    assert threads == 1  # no keeper ran in the worker while the command did
    assert sched == popen[12:] and len(sched[0]) == 1  # the worker's CPU, nice and policy
    assert env == seen["env"] and env["ONLY"] == "this"  # the environment Popen is given
    assert stdin == "/dev/null" and cwd == str(tmp_path)
    assert seen["bears"] is True
    assert seen["moved_before"] == 0.0 and seen["keepers"] == []  # no step in, no keeper
    # Popen's errors, as the worker writes them, and nothing left unreaped.
    assert seen["missing"] == [127, "", "cannot start no-such-program-anywhere: No such file "
                                        "or directory\n"]
    assert seen["same_watch"] is True
    assert seen["noexec"] == [127, "", f"cannot start {seen['root']}/noshebang: Exec format "
                                       "error\n"]
    assert seen["no_cwd"] == [127, "", "cannot start true: No such file or directory\n"]
    assert seen["searched"] == [0, "open\n", ""]
    assert seen["locked"] == [127, "", "cannot start prog: Permission denied\n"]
    assert seen["after_kill"] == [[0, "", ""], True]  # a new watch, and the command ran
    assert seen["mid_request"] == [[0, "", ""], True]  # ran, moved into
    assert seen["daemon"] == [0, "", ""] and seen["after_daemon"] == [0, "", ""]
    assert seen["killed_first"] == [[0, "", ""], True, False]  # ran, moved into; no births
    assert seen["timed_out"] == 124
    assert seen["zombies"] == []


def test_back_to_back_commands_move_and_only_the_first_after_idle_is_born(tmp_path: Path
                                                                          ) -> None:
    # Every command but the first follows another's start well within the idle spell.
    seen = _worker(tmp_path, "cgroup", idle_after_s=60.0)
    born = seen["born"]
    assert isinstance(born, list), born
    assert born[0] == seen["cgroup"] and born[1] == seen["pid"]
    assert seen["moved_first"] == 0.0  # the first was born inside
    assert seen["moved"] != 0.0  # the later ones were moved into
    assert seen["searched"] == [0, "open\n", ""]


def test_where_the_watch_cannot_clone_into_the_cgroup_the_worker_moves(tmp_path: Path
                                                                        ) -> None:
    # A folder for the watch's cgroup: clone3 refuses it, as an old kernel or seccomp would.
    seen = _worker(tmp_path, "folder")
    born = seen["born"]
    assert isinstance(born, list), born
    assert born[0] == seen["cgroup"] and born[1] == seen["pid"]
    assert seen["bears"] is False  # refused once, not asked again
    assert seen["moved"] != 0.0  # the worker stepped in for the spawn
    assert seen["missing"][0] == 127 and seen["timed_out"] == 124  # type: ignore[index]
