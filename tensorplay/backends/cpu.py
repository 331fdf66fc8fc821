"""`tp.backends.cpu`: the CPU's SIMD level, as PyTorch reports the one its kernels
dispatch to. Here the kernels are NumPy's, so this is the best level NumPy found."""


def get_cpu_capability():
    """'AVX512', 'AVX2', or 'DEFAULT' on x86 (PyTorch's names); on Arm 'SVE' or 'DEFAULT'."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:          # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if all(features.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if features.get("AVX2"):
        return "AVX2"
    if features.get("SVE"):
        return "SVE"
    return "DEFAULT"
