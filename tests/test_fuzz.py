"""The differential fuzzer in the default run: a few hundred random programs, each
compared with PyTorch after every step (tests/fuzzing/programs.py says how).

    TP_FUZZ_PROGRAMS=100000 TP_FUZZ_SEED=0 python -m pytest tests/test_fuzz.py -s

runs the long profile (or `python tests/fuzzing --programs 100000`, which prints the
figures and each distinct mismatch with its program).

The default run is a ratchet: the programs of KNOWN are open bugs (each names its
kind); any other mismatch fails, and so does a known program that now passes (take it
off the list).
"""
import os

from fuzzing.programs import run_programs

PROGRAMS = int(os.environ.get("TP_FUZZ_PROGRAMS", "300"))
FIRST_SEED = int(os.environ.get("TP_FUZZ_SEED", "0"))
DEFAULT = (0, 300)

# seed -> (kind, what is wrong). Only for the default programs (seeds 0-299).
KNOWN = {
}


def test_random_programs_match_torch():
    mismatches, stats = run_programs(FIRST_SEED, PROGRAMS)
    print(f"\n{stats['programs']} programs, {stats['steps']} steps, "
          f"{len(mismatches)} with a mismatch")
    known = KNOWN if (FIRST_SEED, PROGRAMS) == DEFAULT else {}
    unexpected = [m for m in mismatches if known.get(m.seed, (None,))[0] != m.kind]
    found = {m.seed for m in mismatches}
    fixed = sorted(seed for seed in known if seed not in found)
    report = "\n\n".join(str(m) for m in unexpected[:10])
    assert not unexpected, f"{len(unexpected)} programs differ from PyTorch:\n\n{report}"
    assert not fixed, f"programs {fixed} of KNOWN now match PyTorch: take them off the list"
