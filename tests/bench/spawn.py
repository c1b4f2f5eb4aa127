"""What starting a command costs the worker, three ways, alternated in rounds: watched (the
worker's watch, workers/deathwatch.py: a plain vfork+exec), through the `setpriv
--pdeathsig` wrapper the worker used before, and unwatched (a `preexec_fn`, so a fork of the
whole worker). Each is `execute.run` of `/bin/true`, with an 80 MiB heap beside it so a fork
copies page tables as a worker's would. Prints medians and 10th percentiles in ms.

Run: .venv/bin/python -m tests.bench.spawn [commands per way, default 300]
"""

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jobs.spec.recipes import Invocation
from workers import deathwatch, execute

ROUND = 20


def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    registry, files = tmp / "w.pgids", execute.Files(tmp / "out", tmp / "err")
    heap = [bytearray(4096) for _ in range(20_000)]
    setpriv = shutil.which("setpriv")
    ways = {"watched": (True, ["/bin/true"]), "preexec_fn": (False, ["/bin/true"])}
    if setpriv:
        ways["setpriv wrapper"] = (True, [setpriv, "--pdeathsig", "KILL", "--", "/bin/true"])
    times: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(n // ROUND):
        for way, (watched, argv) in ways.items():
            if watched:
                deathwatch.start(registry, None)
            else:
                deathwatch.stop()
            time.sleep(0.3)  # the watch's own start (a Python) out of the timed commands
            for _ in range(ROUND):
                call = Invocation(argv=argv, env={}, timeout_s=30)
                t0 = time.perf_counter()
                execute.run(execute.Command("measure", "measure", call, tmp, files, tmp))
                times[way].append((time.perf_counter() - t0) * 1e3)
    deathwatch.stop()
    del heap
    for way, ms in times.items():
        print(f"{way}: median {statistics.median(ms):.3f} ms, "
              f"p10 {sorted(ms)[len(ms) // 10]:.3f} ms ({len(ms)} commands)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
