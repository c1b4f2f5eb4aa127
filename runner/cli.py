"""The `benchfleet` command: a thin layer over runner/, one subcommand per file."""

import argparse
import sys

import redis
from pydantic import ValidationError
from rich.console import Console

from jobs.errors import SpecError, UserError
from runner.commands import check, demo, init, presets, record, status, submit, worker
from workers.settings import Settings

COMMANDS = (submit, status, record, check, init, presets, worker, demo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchfleet", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    args = parser.parse_args(argv)
    console = Console()
    try:
        settings = Settings()
        return int(args.run(args, settings, console))
    except SpecError as error:
        for problem in error.problems:
            _say(problem)
        return 2
    except UserError as error:
        _say(str(error))
        return 2
    except ValidationError as error:
        first = error.errors()[0]
        _say(f"setting BENCHFLEET_{str(first['loc'][0]).upper()}: {first['msg']}")
        return 2
    except redis.ConnectionError:
        _say(f"cannot reach Redis at BENCHFLEET_REDIS_URL ({Settings().redis_url}); start "
             "redis-server or point the variable at a running one")
        return 2
    except KeyboardInterrupt:
        _say("interrupted; stopped what it had started")
        return 130


def _say(sentence: str) -> None:
    # Plain print: a sentence must never be wrapped or coloured into something else.
    print(f"benchfleet: {sentence}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
