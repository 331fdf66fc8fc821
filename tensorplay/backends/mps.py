"""`tp.backends.mps`: Apple's Metal GPU. TensorPlay has no MPS backend (its devices are
`cpu` and `cuda`, the Triton one), so it is neither built nor available."""


def is_built():
    return False


def is_available():
    return False


def is_macos_or_newer(major, minor):
    """Whether this is macOS major.minor or newer, as PyTorch's (False on other systems)."""
    import platform
    release = platform.mac_ver()[0]
    if not release:
        return False
    parts = [int(p) for p in release.split(".")[:2]] + [0]
    return (parts[0], parts[1]) >= (major, minor)


def is_macos13_or_newer(minor=0):
    return is_macos_or_newer(13, minor)
