"""Build tinymoe for one backend: byte-compile the sources and write the launchers."""

import argparse
import json
import os
import py_compile
import shutil
import sys
from pathlib import Path

DTYPES = {"cuda": "float32", "metal": "float32", "cpu": "float64"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.backend not in DTYPES:
        print(f"error: unknown backend {args.backend}", file=sys.stderr)
        return 2
    out = Path(args.out)
    lib = out / "lib"
    shutil.rmtree(lib, ignore_errors=True)
    lib.mkdir(parents=True)
    for source in sorted(Path("src").glob("*.py")):
        py_compile.compile(str(source), cfile=str(lib / (source.stem + ".pyc")), doraise=True)
        print(f"compiled {source}")
    cuda_arch = os.environ.get("MLX_CUDA_ARCHITECTURES", "121").split(";")[0]
    (lib / "backend.json").write_text(json.dumps({"backend": args.backend, "cuda_arch": cuda_arch,
                                                  "dtype": DTYPES[args.backend]}))
    for name, module in (("mlxcel-bench-decode", "bench_decode"),):
        launcher = out / name
        launcher.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(lib)!r})\n"
                            f"import {module}\nsys.exit({module}.main())\n")
        launcher.chmod(0o755)
        print(f"wrote {launcher}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except py_compile.PyCompileError as error:
        print(f"error: {error.msg}", file=sys.stderr)
        sys.exit(1)
