"""A stand-in target with a regression planted several commits deep, and a commit between that
fails to build: the history `benchfleet bisect` is tested on.

Commit 0 is the demo target's `main` (good). Commit PLANTED makes every decode step check the
router four times over by running all experts through the gather path, not only the chosen
ones: real extra work, about eight times the decode time (2.8x with one check: 580 to 634
against 220 to 224 tok/s on a quiet 2-core host). That size is this machine's doing: on a
2-core host shared with the rest of the test suite, identical runs vary by up to 2.5x, so a
regression of 3x cannot be told from load a minute later. Commit BROKEN has a syntax error
the next commit fixes. The others change text that no measurement reads.
"""

from dataclasses import dataclass
from pathlib import Path

from runner.demo.target_repo import commit_all, make_target_repo

PLANTED, BROKEN, LENGTH = 6, 4, 9
_FUSED_CALL = "            y = self.fused_experts(layer, x, chosen, gates)\n"
_CHECK = """\
            # Check the router: run every expert through the gather path, keep the chosen
            # four times over (a debugging loop left in).
            for _ in range(4):
                every = np.arange(self.experts)[None, :]
                dense = np.concatenate([self.gather_experts(layer, x, every[:, i:i + self.top_k])
                                        for i in range(0, self.experts, self.top_k)], axis=1)[0]
                if not np.allclose(y[0], (gates[0][:, None] * dense[chosen[0]]).sum(axis=0),
                                   atol=1e-3):
                    raise RuntimeError("routed experts disagree with the dense experts")
"""
_BROKEN = "\ndef broken(:\n"


@dataclass(frozen=True)
class History:
    repo: Path
    commits: list[str]  # oldest first: good is commits[0], bad is commits[-1]

    @property
    def planted(self) -> str:
        return self.commits[PLANTED]

    @property
    def broken(self) -> str:
        return self.commits[BROKEN]


def make_history(dest: Path) -> History:
    _, good = make_target_repo(dest)
    moe = dest / "src" / "tinymoe.py"
    steps = [
        (dest / "README.md", "append", "\nModels are directories; see `config.json`.\n",
         "README: where models live"),
        (moe, "append", "\n# The router's top-k uses argpartition: no full sort per token.\n",
         "tinymoe: say why the router uses argpartition"),
        (dest / "src" / "bench_decode.py", "append", "\n# Timings use perf_counter.\n",
         "bench: say which clock it reads"),
        (moe, "append", _BROKEN, "tinymoe: start a helper (does not compile)"),
        (moe, "remove", _BROKEN, "tinymoe: drop the unfinished helper"),
        (moe, "check", _CHECK, "decode: check the router against every expert"),
        (dest / "README.md", "append", "\nThe decoder is deterministic per seed.\n",
         "README: determinism"),
        (dest / "src" / "kernels.py", "append", "\n# Kernel names follow MLX's.\n",
         "kernels: where the names come from"),
    ]
    commits = [good]
    for path, how, text, message in steps:
        source = path.read_text()
        if how == "append":
            path.write_text(source + text)
        elif how == "remove":
            path.write_text(source.replace(text, ""))
        else:
            assert _FUSED_CALL in source
            path.write_text(source.replace(_FUSED_CALL, _FUSED_CALL + text))
        commits.append(commit_all(dest, message))
    assert len(commits) == LENGTH
    return History(dest, commits)
