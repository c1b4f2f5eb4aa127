"""The `benchfleet` click group: one module per subcommand, each defining `command` (a click
command) over runner/; a module is imported only when its subcommand is called."""

import click

from runner import VERSION_LINE, __version__

# Imported only when called, so a quick `status` never pays for celery or matplotlib, and
# `--help` lists them from the first sentence of each one's help, kept here
# (tests/runner/test_startup.py holds them equal).
COMMANDS = {
    "submit": "Expand a sweep into cells and queue them; the last line printed is the sweep "
              "id.",
    "status": "Show a sweep's cells (the newest sweep by default); SWEEP is an id or a unique "
              "prefix.",
    "sweeps": "List the sweeps in Redis, newest first.",
    "hosts": "List live workers: host, backend, chip, memory, OS, toolchains, checkpoints, "
             "tags, the cell each runs, and when each was last seen.",
    "rerun": "Queue cells of a final sweep again as a new generation; the record keeps every "
             "attempt and uses the latest successful one.",
    "cancel": "Cancel a sweep's cells (all of them without CELL): queued ones end at once, "
              "running ones have their command's process group killed by their worker.",
    "restore": "Put a sweep Redis has lost back from the artifact store; queue what never ran.",
    "record": "Write a sweep's record (Markdown, JSON, PNG); SWEEP defaults to the newest.",
    "check": "Verify a record JSON: figures, verdict, accounting, flags (and the artifacts).",
    "compare": "Compare OLD (the reference) with NEW per backend, model and arm on decode and "
               "prefill tok/s (higher is better).",
    "bisect": "Bisect the first-parent history from GOOD to BAD; exit 0 when the first bad "
              "commit is found, 1 when the bisect ends without one (no regression, undecided, "
              "ambiguous).",
    "init": "Write a sweep file from a shipped preset (`benchfleet presets` lists them).",
    "presets": "List the shipped sweep presets.",
    "keys": "The coordinator's signing keys.",
    "worker": "Run a Celery worker for one backend on this host.",
    "fleet": "A Redis, the keys and workers on this machine, kept running for your own sweeps "
             "(state in BENCHFLEET_FLEET_DIR, default ~/.benchfleet/fleet).",
    "deploy": "Install and control benchfleet workers on lab hosts over SSH.",
    "demo": "Private Redis + two local workers + the bundled demo sweep, ending in a record.",
    "history": "Show history from the artifact store (BENCHFLEET_ARTIFACTS), indexed in "
               "BENCHFLEET_HISTORY_DB: the index reads again the sweeps whose attempts changed "
               "since its last build.",
    "regressions": "List regression candidates; exit 1 when one is confirmed, else 0 (2: bad "
                   "input).",
    "publish": "Write index, series, regressions and record pages; exit 0 (2: bad input).",
}


class Commands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module = __import__(f"runner.commands.{name}", fromlist=["command"])
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from COMMANDS, as click would lay it out, without importing any."""
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        # A bare Command shortens a help text the way the real one would.
        rows = [(name, click.Command(name, help=text).get_short_help_str(limit))
                for name, text in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=VERSION_LINE)
def cli() -> None:
    """Paired benchmark and profile sweeps across backends, run by Celery workers, combined
    into one record."""
