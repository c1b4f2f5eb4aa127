"""Linux's prctl(2) through ctypes: the few flags the worker sets on itself and its commands."""

import ctypes
import ctypes.util
import os
import sys
from functools import cache

PDEATHSIG = 1  # PR_SET_PDEATHSIG: this signal when the parent dies
DUMPABLE = 4  # PR_SET_DUMPABLE: 0 closes /proc/PID/environ and mem to the same user
CHILD_SUBREAPER = 36  # PR_SET_CHILD_SUBREAPER: orphaned descendants become our children


def available() -> bool:
    return sys.platform.startswith("linux")


def prctl(option: int, value: int) -> None:
    """Set one flag of this process; raises OSError where the kernel refuses."""
    if _libc().prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
