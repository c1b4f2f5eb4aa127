"""Work done in a forked child beside the parent's: its result (or its exception) handed back,
or its output read as it comes.

The record's figures are drawn this way, while the parent writes the JSON and Markdown
(docs/benchmarks/overhead-profiles.md: about 0.5 s a figure, and matplotlib's import, against
a record of one second at 1,000 cells): by a `Primed` child, started before its input exists
so that matplotlib's import runs beside the parent's reading of the attempts, then sent what
each figure shows (pickled), and drawing each in a `Forked` child of its own, which has it
already. A `Streamed` child writes as it goes while the parent reads: the record's attempts
are read and hashed that way, a step ahead of the record's process (runner/read_ahead.py).
Only on Linux: macOS's system frameworks are not safe to use in a forked child, so
elsewhere, and wherever a fork fails, the work is done in this process when its result is
asked for.
"""

import os
import pickle
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from functools import partial
from typing import BinaryIO, Generic, TypeVar

from workers.shared.processes import die_with_parent

T = TypeVar("T")
A = TypeVar("A")

FORKS = sys.platform == "linux"
# Signals that stop a command: blocked across the fork, so none lands in the child while it
# still runs the parent's code (it would unwind through the parent's finally blocks).
_STOPPING = {signal.SIGINT, signal.SIGTERM}
_FAILED = 1  # the child's exit status when its work raised (the exception is sent)
# What a streaming child writes at a time: a pipe holds 64 KiB.
_STREAM_BUFFER = 1 << 16


class ChildFailed(RuntimeError):
    """The child ended without a result: killed, or out of memory."""


class Forked(Generic[T]):
    """`work()` started in a child now; `result()` waits for it, once. Leaving a `with` block
    before `result()` (the parent failed on its side) stops the child."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work, self._pid, self._read, self._collected = work, 0, -1, False
        if FORKS:
            try:
                self._start()
            except BaseException:  # a stop signal let in once forked: no caller can stop it
                self.stop()
                raise

    def _start(self) -> None:
        _fork(partial(_answer, self._work), self._keep)

    def _keep(self, pid: int, read: int) -> None:
        self._pid, self._read = pid, read

    @property
    def forked(self) -> bool:
        """Whether the work runs in a child (else it runs here, when its result is asked)."""
        return self._pid != 0

    def result(self) -> T:
        if self._collected:
            raise RuntimeError("a forked work's result is collected once")
        self._collected = True
        if not self._pid:
            return self._work()
        with os.fdopen(self._read, "rb") as pipe:
            self._read = -1
            data = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, _FAILED):
            raise ChildFailed(f"the child drawing it ended without a result ({_ending(code)}); "
                              "run the command again")
        try:
            done, value, where = pickle.loads(data)
        except Exception as error:  # noqa: BLE001 - any unreadable answer is the same failure
            raise ChildFailed(f"the child drawing it sent an unreadable answer ({error}); run "
                              "the command again") from None
        if not done:
            value.add_note(f"raised in the child that did the work:\n{where}")
            raise value
        result: T = value
        return result

    def stop(self) -> None:
        self._pid = _end(self._pid)
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def __enter__(self) -> "Forked[T]":
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class Primed(Generic[A, T]):
    """A child started now that runs `prime()` at once and then waits: `give(x)` sends it its
    input (pickled), `result()` waits for `work(x)`. Where no child could be forked, `work(x)`
    runs here when the result is asked (`prime` is then left out: `work` must not need it)."""

    def __init__(self, prime: Callable[[], object], work: Callable[[A], T]) -> None:
        self._work, self._inbound, self._collected = work, -1, False
        self._given: tuple[A] | None = None
        read, write = os.pipe()
        try:
            self._child: Forked[T] = Forked(partial(_primed, prime, work, read, write))
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        if self._child.forked:
            self._inbound = write
        else:
            os.close(write)

    @property
    def given(self) -> bool:
        return self._given is not None

    def give(self, given: A) -> None:
        if self._given is not None:
            raise RuntimeError("a primed work's input is given once")
        self._given = (given,)
        if self._inbound < 0:
            return
        # Its length first: the child reads that much, not up to an end of file that a later
        # fork of this process, holding the pipe too, would put off.
        message = pickle.dumps(given)
        left = memoryview(len(message).to_bytes(8, "big") + message)
        try:
            while left:  # the child reads it as it comes, primed or not
                left = left[os.write(self._inbound, left):]
        except BrokenPipeError:
            pass  # the child is gone: result() says how
        finally:
            os.close(self._inbound)
            self._inbound = -1

    def result(self) -> T:
        if self._given is None:
            raise RuntimeError("a primed work's result is asked before its input was given")
        if not self._child.forked:
            if self._collected:
                raise RuntimeError("a primed work's result is collected once")
            self._collected = True
            return self._work(*self._given)
        return self._child.result()

    def stop(self) -> None:
        if self._inbound >= 0:
            os.close(self._inbound)
            self._inbound = -1
        self._child.stop()

    def __enter__(self) -> "Primed[A, T]":
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class Streamed:
    """`produce(out)` run in a child now, writing as it goes: the parent reads what it wrote
    from `pipe` as it comes (an end of file, short of what it expected, says that the child
    stopped: killed, or raised). `pipe` is None where no child could be forked. Leaving a
    `with` block stops and reaps the child, done or not."""

    def __init__(self, produce: Callable[[BinaryIO], None]) -> None:
        self._pid = 0
        self.pipe: BinaryIO | None = None
        try:
            _fork(partial(_stream, produce), self._keep)
        except BaseException:  # a stop signal let in once forked: no caller can stop it
            self.stop()
            raise

    def _keep(self, pid: int, read: int) -> None:
        self._pid = pid
        self.pipe = os.fdopen(read, "rb")

    def stop(self) -> None:
        self._pid = _end(self._pid)
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None

    def __enter__(self) -> "Streamed":
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def _stream(produce: Callable[[BinaryIO], None], write: int) -> int:
    with os.fdopen(write, "wb", buffering=_STREAM_BUFFER) as out:
        produce(out)
    return 0


def _primed(prime: Callable[[], object], work: Callable[[A], T], read: int, write: int) -> T:
    """In the child: prime while a thread takes the input in as it comes (the parent's `give`
    never waits for the priming, whatever the input's size), then work on it."""
    os.close(write)
    inbound: list[bytes | BaseException] = []
    taker = threading.Thread(target=_take, args=(read, inbound))
    taker.start()
    try:
        prime()
    finally:
        taker.join()  # ended by the input, or by the parent's end of the pipe
    if isinstance(inbound[0], BaseException):
        raise inbound[0]
    given: A = pickle.loads(inbound[0])
    return work(given)


def _take(read: int, inbound: list[bytes | BaseException]) -> None:
    try:
        with os.fdopen(read, "rb") as pipe:
            size = int.from_bytes(_exactly(pipe, 8), "big")
            inbound.append(_exactly(pipe, size))
    except BaseException as error:  # noqa: BLE001 - raised in the child's main thread
        inbound.append(error)


def _exactly(pipe: BinaryIO, size: int) -> bytes:
    data = pipe.read(size)
    if len(data) != size:
        raise EOFError("the parent closed the pipe before sending the work's input whole")
    return data


def _fork(body: Callable[[int], int], keep: Callable[[int, int], None]) -> bool:
    """A child forked now that runs `body` on the write end of a pipe and exits with the
    status it returns. `keep(pid, read end)` is called before a stop signal can land, so its
    owner, holding the child, can stop it; False where no child could be forked."""
    if not FORKS:
        return False
    read, write = os.pipe()
    parent = os.getpid()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns of fork in a process with threads: the only other thread
            # a record has is OpenBLAS's pool (numpy), which quiesces itself around a fork.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except BaseException as error:
        os.close(read)
        os.close(write)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if isinstance(error, OSError):  # no fork (out of memory, or of processes)
            return False
        raise
    if pid == 0:  # the child: never returns
        _child(body, read, write, parent, blocked)
    os.close(write)
    keep(pid, read)
    # A stop signal that came while they were blocked lands here; the owner stops the child.
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return True


def _end(pid: int) -> int:
    """Kill the child `pid` (0: none) and reap it; 0, for its owner to hold instead."""
    if pid:
        os.kill(pid, signal.SIGKILL)  # one that ended is a zombie: no matter
        os.waitpid(pid, 0)
    return 0


def _child(body: Callable[[int], int], read: int, write: int, parent: int,
           blocked: set[int | signal.Signals]) -> None:
    code = _FAILED  # unless `body` returns
    try:
        # A stop signal kills the child outright, and so does the parent's death.
        for number in _STOPPING:
            signal.signal(number, signal.SIG_DFL)
        die_with_parent()
        if os.getppid() != parent:  # the parent died before the signal was set
            return
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(read)
        code = body(write)
    finally:
        # Not sys.exit: the parent's atexit handlers, buffers and finally blocks are not ours.
        os._exit(code)


def _answer(work: Callable[[], object], write: int) -> int:
    """`work`'s result, or its exception, pickled onto `write`; the child's exit status."""
    code = 0
    try:
        message = pickle.dumps((True, work(), ""))
    except BaseException as error:  # noqa: BLE001 - handed to the parent, which raises it
        code = _FAILED
        message = _failure(error, traceback.format_exc())
    with os.fdopen(write, "wb") as pipe:
        pipe.write(message)
    return code


def _failure(error: BaseException, where: str) -> bytes:
    """The exception as the parent will read it back; its words where it does not pickle
    both ways."""
    try:
        message = pickle.dumps((False, error, where))
        pickle.loads(message)
    except Exception:  # noqa: BLE001 - an exception of its own kind that does not round-trip
        message = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}"), where))
    return message


def _ending(code: int) -> str:
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:  # a real-time signal has no name
        return f"killed by signal {-code}"
