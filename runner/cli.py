"""The `benchfleet` command: its entry and exit codes; the click group of its subcommands, one
per file, is runner/commands/.

Exit codes, the same for every command (docs/cli.md):
  0  done, and the answer is yes (all cells done, the record passes, nothing got worse)
  1  done, and the answer is no (a cell failed, the record fails its check, a regression)
  2  the user's input or setup is wrong; one sentence on stderr says what to do
  3  not finished yet (`status` without --watch while cells are still queued or running)
  130 interrupted (Ctrl-C or SIGTERM); everything the command started was stopped
"""

import atexit
import os
import signal
import sys

from runner import VERSION_LINE


def _interrupted_while_starting(signum: int, frame: object) -> None:
    # Ctrl-C before main() runs, or while it imports click and the rest, ends as any
    # interrupt does.
    print("benchfleet: interrupted; stopped what it had started", file=sys.stderr)
    sys.exit(130)


signal.signal(signal.SIGINT, _interrupted_while_starting)

OK, NO, USAGE, PENDING, INTERRUPTED = 0, 1, 2, 3, 130


def main(argv: list[str] | None = None, last: bool = False) -> int:
    """The command `argv` names; `last`: this process ends with it (the console script)."""
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        # Scripts ask this most, and it needs nothing: answered before click is imported.
        print(VERSION_LINE)
        return OK
    import click  # most of the start-up; a Ctrl-C meanwhile is the start-up handler's

    from jobs.errors import SpecError, UserError
    from runner.collector import process_ends_with_command
    from runner.commands import cli

    if last:
        process_ends_with_command()

    signal.signal(signal.SIGINT, signal.default_int_handler)  # a KeyboardInterrupt from here on
    try:
        code = cli.main(args=argv, prog_name="benchfleet", standalone_mode=False)
    except click.exceptions.Abort:
        return _fail("interrupted; stopped what it had started", INTERRUPTED)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Exit as done:
        return done.exit_code
    except SpecError as error:
        for problem in error.problems:
            _say(problem)
        return USAGE
    except UserError as error:
        return _fail(str(error), USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted; stopped what it had started", INTERRUPTED)
    except Exception as error:
        sentence = _redis_sentence(error)
        if sentence is None:
            raise
        return _fail(sentence, USAGE)
    return int(code or 0)


def entry() -> None:
    """The `benchfleet` process: main(), then out without tearing the interpreter down.

    Freeing every module's objects one by one at exit costs a short command 25 to 60 ms (a
    sixth of a `status`), and nothing of it is seen. What an ordinary exit does that matters is
    still done first: the exit handlers run (logging's flush, temporary folders' removal) and
    the output is flushed. Where that cannot be vouched for (another thread still running, an
    output that will not flush), the process exits the ordinary way."""
    code = main(last=True)
    # Looked up, not imported (typing and threading are a fifth of `--version`): a process
    # that never imported threading has no thread the interpreter would wait for.
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon
                                     for t in threading.enumerate()
                                     if t is not threading.main_thread()):
        sys.exit(code)  # the interpreter joins such a thread before it exits
    atexit._run_exitfuncs()  # each runs once: the list is emptied as it runs
    try:  # the streams in use and the process's own (a Celery worker's stand in for them)
        for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__,
                                          sys.__stderr__) if s is not None}.values():
            stream.flush()
    except Exception:  # noqa: BLE001 - a closed pipe: exit as before, with Python's report
        sys.exit(code)
    os._exit(code)


def _redis_sentence(error: Exception) -> str | None:
    """A sentence for Redis refusing or unreachable; None for anything else (a bug: it
    surfaces). redis-py is imported by the command that used it, never here."""
    redis = sys.modules.get("redis")
    if redis is None or not isinstance(error, redis.RedisError):
        return None
    if isinstance(error, redis.exceptions.OutOfMemoryError) or "'maxmemory'" in str(error):
        return _full()
    if isinstance(error, (redis.AuthenticationError, redis.ResponseError)):
        # NOAUTH, WRONGPASS, DENIED (protected mode); a wrong password is a ConnectionError
        # to redis-py, so it is caught before one
        return _refused(error)
    if isinstance(error, redis.sentinel.MasterNotFoundError):
        return _no_primary()
    if isinstance(error, redis.ConnectionError) and "max number of clients" in str(error):
        return _too_many()
    if isinstance(error, redis.ConnectionError):
        return _unreachable()
    return None


def _full() -> str:
    from workers.shared.settings import load_settings, redacted

    url = redacted(load_settings().redis_url)
    return (f"Redis at BENCHFLEET_REDIS_URL ({url}) is full: it refuses writes past its "
            "maxmemory; raise maxmemory (with maxmemory-policy noeviction) or free space")


def _too_many() -> str:
    from workers.shared.settings import load_settings, redacted

    url = redacted(load_settings().redis_url)
    return (f"Redis at BENCHFLEET_REDIS_URL ({url}) refuses new connections: it has reached "
            "its maxclients; raise maxclients in its configuration (each worker holds a few "
            "connections) or stop some clients")


def _unreachable() -> str:
    from workers.shared.settings import load_settings, redacted

    url = redacted(load_settings().redis_url)
    return (f"cannot reach Redis at BENCHFLEET_REDIS_URL ({url}); start redis-server or point "
            "the variable at a running one")


def _no_primary() -> str:
    from workers.shared.settings import load_settings, redacted

    url = redacted(load_settings().redis_url)
    return (f"no sentinel in BENCHFLEET_REDIS_URL ({url}) names a primary for its service: "
            "start the sentinels, or check that they watch that service name "
            "(redis-cli -p PORT SENTINEL masters)")


def _refused(error: Exception) -> str:
    from workers.shared.settings import load_settings, redacted

    first = str(error).split(". ")[0].split(" NOTE")[0]
    auth = any(word in str(error) for word in ("NOAUTH", "WRONGPASS", "password", "auth"))
    hint = "check the password in the URL" if auth else "see redis-server's log"
    return (f"Redis at BENCHFLEET_REDIS_URL ({redacted(load_settings().redis_url)}) refused: "
            f"{first}; {hint}")


def _fail(sentence: str, code: int) -> int:
    _say(sentence)
    return code


def _say(sentence: str) -> None:
    # Plain print: a sentence must never be wrapped or coloured into something else.
    print(f"benchfleet: {sentence}", file=sys.stderr)


if __name__ == "__main__":
    entry()
