"""Work done in a forked child beside the parent's, its result (or its exception) handed back.

The record's figures are drawn this way: a child forked once the record is built has it
already, so nothing is copied or pickled on the way in, and matplotlib is imported and each
figure drawn there while the parent writes the JSON and Markdown (docs/benchmarks/
overhead-profiles.md: about 0.6 s a figure, and matplotlib's import, against a record of one
second at 1,000 cells). Only on Linux: macOS's system frameworks are not safe to use in a
forked child, so elsewhere the work is done in this process when it is asked for.
"""

import os
import pickle
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

FORKS = sys.platform == "linux"


class ChildFailed(RuntimeError):
    """The child ended without a result: killed, or out of memory."""


class Forked(Generic[T]):
    """`work()` started in a child now; `result()` waits for it. Leaving a `with` block
    before `result()` (the parent failed on its side) stops the child."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work, self._pid, self._read = work, 0, -1
        if FORKS:
            self._start()

    def _start(self) -> None:
        read, write = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12 warns of fork in a process with threads: the only other thread a
            # record has is OpenBLAS's pool (numpy), which quiesces itself around a fork.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            os.close(read)
            _child(self._work, write)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> T:
        if not self._pid:
            return self._work()
        with os.fdopen(self._read, "rb") as pipe:
            self._read = -1
            data = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if not data:
            raise ChildFailed(f"the child drawing it ended without a result ("
                              f"{_ending(status)}); run the command again")
        done, value = pickle.loads(data)
        if not done:
            raise value
        result: T = value
        return result

    def stop(self) -> None:
        if self._pid:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = 0
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def __enter__(self) -> "Forked[T]":
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def _child(work: Callable[[], object], write: int) -> None:
    code = 0
    try:
        try:
            message = pickle.dumps((True, work()))
        except BaseException as error:  # noqa: BLE001 - handed to the parent, which raises it
            code = 1
            try:
                message = pickle.dumps((False, error))
            except Exception:  # noqa: BLE001 - an exception that does not pickle: its words
                message = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: "
                                                            f"{error}")))
        with os.fdopen(write, "wb") as pipe:
            pipe.write(message)
    finally:
        # Not sys.exit: the parent's atexit handlers, buffers and finally blocks are not ours.
        os._exit(code)


def _ending(status: int) -> str:
    if not os.WIFSIGNALED(status):
        return f"exit status {os.waitstatus_to_exitcode(status)}"
    number = os.WTERMSIG(status)
    try:
        return f"killed by {signal.Signals(number).name}"
    except ValueError:  # a real-time signal has no name
        return f"killed by signal {number}"
