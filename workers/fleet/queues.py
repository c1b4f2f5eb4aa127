"""Queue and task names: one queue per backend, one per worker host for pinned groups."""

TASK = "benchfleet.run_group"


def backend_queue(backend: str) -> str:
    return f"benchfleet.backend.{backend}"


def host_queue(worker: str, backend: str) -> str:
    return f"benchfleet.host.{worker}.{backend}"
