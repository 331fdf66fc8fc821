"""A differential fuzzer: random programs run side by side in TensorPlay and PyTorch.

    programs.py   the program generator and the side-by-side runner
    tangents.py   forward-mode AD: a share of the op steps' tangents against PyTorch's
    compiled.py   a share of the programs replayed through tp.compile against eager
    distributions.py  tp.distributions against torch.distributions on random parameters
    __main__.py   `python tests/fuzzing --programs 100000` runs the long profile and prints
                  the figures (tests/test_fuzz.py runs a short one in the default suite)
"""
