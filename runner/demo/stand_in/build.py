"""Build tinymoe for one backend: check the sources compile, then write mlxcel-bench-decode as
one self-contained executable (a zipapp), as a release binary is: copying it elsewhere keeps
it whole, and a later build cannot change it."""

import argparse
import os
import py_compile
import shutil
import sys
import zipapp
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
    stage = out / ".stage"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    for source in sorted(Path("src").glob("*.py")):
        py_compile.compile(str(source), cfile=str(stage / "check.pyc"), doraise=True)
        shutil.copy(source, stage / source.name)
        print(f"compiled {source}")
    (stage / "check.pyc").unlink()
    cuda_arch = os.environ.get("MLX_CUDA_ARCHITECTURES", "121").split(";")[0]
    (stage / "build_info.py").write_text(f"BACKEND = {args.backend!r}\nCUDA_ARCH = {cuda_arch!r}\n"
                                         f"DTYPE = {DTYPES[args.backend]!r}\n")
    (stage / "__main__.py").write_text("import sys\nimport bench_decode\n"
                                       "sys.exit(bench_decode.main())\n")
    target = out / "mlxcel-bench-decode"
    zipapp.create_archive(stage, target, interpreter=sys.executable)
    target.chmod(0o755)
    shutil.rmtree(stage)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except py_compile.PyCompileError as error:
        print(f"error: {error.msg}", file=sys.stderr)
        sys.exit(1)
