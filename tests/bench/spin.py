"""A measured command for the quietness figure: keeps one core busy for --seconds, then
prints mlxcel's results block with what it did (loop iterations per second as "decode")."""

import argparse
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, required=True)
    args = p.parse_args()
    start, spins = time.perf_counter(), 0
    while time.perf_counter() - start < args.seconds:
        spins += 1
    wall = time.perf_counter() - start
    print("[Profile Results]")
    print("  Prompt tokens:    1")
    print("  Generated tokens: 1")
    print(f"  Prefill:          {wall * 1e3:.2f} ms ({1 / wall:.2f} tok/s)")
    print(f"  Decode:           {wall * 1e3:.2f} ms ({spins / wall:.2f} tok/s)")


if __name__ == "__main__":
    main()
