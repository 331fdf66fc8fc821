"""`python tests/fuzzing --programs 100000 [--seed 0] [--steps 8]`: the long profile.

Prints the figures (programs, steps of each kind, mismatches by kind, those of KNOWN
apart), every finding with the program that produced it, and one program of each kind of
KNOWN mismatch. Exit status 1 when anything outside KNOWN was found.
"""
import argparse
import collections
import os
import sys
import time

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.dirname(TESTS), TESTS]     # this checkout's tensorplay, and opinfo
os.environ.setdefault("TRITON_INTERPRET", "1")

from fuzzing.programs import ERROR_KINDS, run_programs  # noqa: E402


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
          f"{stats['index']} indexing; {stats['raised']} raised in both; "
          f"{stats['jvp']} tangent checks, {stats['compiled']} compiled replays, "
          f"{stats['distribution']} distributions) "
          f"in {seconds:.0f} s")
    print(f"{stats['oracle']} differences decided by the float64 oracle "
          f"(TensorPlay no further from float64 than PyTorch)")
    found = [m for m in mismatches if m.known is None]
    known = [m for m in mismatches if m.known is not None]
    kinds = collections.Counter(m.kind for m in found)
    print(f"{len(found)} programs with a finding: {dict(kinds) or 'none'}")
    errors = sum(m.kind in ERROR_KINDS for m in mismatches)
    print(f"{len(known)} with a mismatch of KNOWN; error paths in all: {errors} "
          f"({100 * errors / max(stats['programs'], 1):.2f}% of the programs)")
    by_known = collections.Counter((m.kind, m.step) for m in known)
    for (kind, step), n in by_known.most_common():
        print(f"    {n:5d}  {kind}, {step}")
    # every finding in full; one program for each kind of KNOWN mismatch
    for m in found:
        print()
        print(m)
    seen = set()
    for m in known:
        key = (m.kind, m.step)
        if key in seen or len(seen) >= args.show:
            continue
        seen.add(key)
        print()
        print("(KNOWN) " + str(m))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
