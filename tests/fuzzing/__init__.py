"""A differential fuzzer: random programs run side by side in TensorPlay and PyTorch.

    programs.py   the program generator and the side-by-side runner
    __main__.py   `python tests/fuzzing --programs 100000` runs the long profile and prints
                  the figures (tests/test_fuzz.py runs a short one in the default suite)
"""
