"""What a host's probe found, as its workers publish it in their lease records and `benchfleet
hosts` shows it."""

from jobs.record.attempts import HostFacts
from jobs.strict import Strict


class Capabilities(Strict):
    host: HostFacts
    # Backends the probe found: cuda (nvidia-smi lists a GPU), metal (Apple Silicon macOS), cpu.
    backends: list[str]
    # Toolchains on PATH and the version each reports (cargo, rustc, nvcc, xcrun, cmake).
    toolchains: dict[str, str] = {}
    models_dir: str
    # Checkpoints: the directories under MODELS_DIR.
    checkpoints: list[str] = []
    probed: str
