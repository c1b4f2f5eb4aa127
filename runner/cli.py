"""The `benchfleet` command: a thin layer over runner/, one subcommand per file."""

import argparse
import sys

import redis
from pydantic import ValidationError
from rich.console import Console

from jobs.errors import SpecError, UserError
from runner.commands import demo, record, status, submit, worker
from workers.settings import Settings

COMMANDS = (submit, status, record, worker, demo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchfleet", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    args = parser.parse_args(argv)
    console = Console()
    err = Console(stderr=True)
    try:
        settings = Settings()
        return int(args.run(args, settings, console))
    except SpecError as error:
        for problem in error.problems:
            err.print(f"benchfleet: {problem}", markup=False, highlight=False)
        return 2
    except UserError as error:
        err.print(f"benchfleet: {error}", markup=False, highlight=False)
        return 2
    except ValidationError as error:
        first = error.errors()[0]
        err.print(f"benchfleet: setting BENCHFLEET_{str(first['loc'][0]).upper()}: "
                  f"{first['msg']}", markup=False, highlight=False)
        return 2
    except redis.ConnectionError:
        err.print("benchfleet: cannot reach Redis at BENCHFLEET_REDIS_URL "
                  f"({Settings().redis_url}); start redis-server or point the variable at "
                  "a running one", markup=False, highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("benchfleet: interrupted; stopped what it had started")
        return 130


if __name__ == "__main__":
    sys.exit(main())
