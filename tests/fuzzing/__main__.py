"""`python tests/fuzzing --programs 100000 [--seed 0] [--steps 8]`: the long profile.

Prints the figures (programs, steps of each kind, mismatches by kind) and every distinct
mismatch with the program that produced it. Exit status 1 when anything was found.
"""
import argparse
import collections
import os
import sys
import time

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.dirname(TESTS), TESTS]     # this checkout's tensorplay, and opinfo
os.environ.setdefault("TRITON_INTERPRET", "1")

from fuzzing.programs import run_programs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(prog="python tests/fuzzing")
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--show", type=int, default=20, help="mismatches to print in full")
    args = parser.parse_args()
    start = time.perf_counter()
    mismatches, stats = run_programs(args.seed, args.programs, args.steps)
    seconds = time.perf_counter() - start
    print(f"{stats['programs']} programs, {stats['steps']} steps "
          f"({stats['op']} ops, {stats['view']} views, {stats['inplace']} in-place, "
          f"{stats['index']} indexing; {stats['raised']} raised in both) in {seconds:.0f} s")
    kinds = collections.Counter(m.kind for m in mismatches)
    print(f"{len(mismatches)} programs with a mismatch: {dict(kinds) or 'none'}")
    seen = set()
    for m in mismatches:
        key = (m.kind, m.detail.split(":")[0].split("=")[-1].strip().split("(")[0])
        if key in seen or len(seen) >= args.show:
            continue
        seen.add(key)
        print()
        print(m)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
