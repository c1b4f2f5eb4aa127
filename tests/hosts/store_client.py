"""Artifact-store operations run on a namespace host, as a worker or the coordinator would run
them: `python -m tests.hosts.store_client publish|read|read_result|exists|attempts|put|get ...`,
the store and its key from BENCHFLEET_* settings. Prints JSON; a store error exits 1 with its
sentence."""

import json
import shutil
import sys
from pathlib import Path

from jobs.errors import UserError
from workers.shared.settings import load_settings
from workers.shared.stores import CorruptArtifact, open_store
from workers.shared.stores.manifest import sha256_file


def main(argv: list[str]) -> int:
    settings = load_settings()
    store = open_store(settings.artifacts, settings)
    verb, args = argv[0], argv[1:]
    try:
        if verb == "publish":
            source, sweep, cell, attempt = args
            staging = store.staging()
            shutil.copytree(source, staging, dirs_exist_ok=True)
            print(json.dumps(store.publish(staging, sweep, cell, int(attempt))))
        elif verb == "read":
            sweep, cell, attempt = args
            files = store.read(sweep, cell, int(attempt))
            print(json.dumps({name: sha256_file(path) for name, path in files.items()}))
        elif verb == "read_result":
            sweep, cell, attempt = args
            result, manifest = store.read_result(sweep, cell, int(attempt))
            print(json.dumps([result.decode() if result else None,
                              json.loads(manifest)["files"]["result.json"]["sha256"]]))
        elif verb == "exists":
            print(json.dumps(store.exists(args[0])))
        elif verb == "attempts":
            print(json.dumps(store.attempts(*args)))
        elif verb == "put":
            print(json.dumps(store.put_file(Path(args[0]), args[1])))
        elif verb == "get":
            print(json.dumps(store.get_file(args[0], Path(args[1]))))
    except (CorruptArtifact, UserError, OSError) as error:
        print(f"store_client: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
