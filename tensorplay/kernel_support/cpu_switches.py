"""The CPU kernels' switches, set through `tp.backends.cpu` (their public place, which the
kernels may not import): kept here, in the kernel support layer, where they read them."""

# Winograd's F(2x2, 3x3) for the 3x3 convolutions it measured faster at
# (cpu_kernels/conv.py, WINOGRAD); why it is off: tensorplay/backends/cpu.py.
allow_winograd = False
