"""What `build.py` recorded in the built program (backend, commit, CUDA architectures); empty
when the decoder runs from a source tree."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

BUILD_INFO = "build_info.json"


@cache
def build_info() -> dict[str, str]:
    try:
        text = resources.files(__package__).joinpath(BUILD_INFO).read_text()
    except (FileNotFoundError, NotADirectoryError, KeyError):
        return {}
    return {str(k): str(v) for k, v in json.loads(text).items()}
