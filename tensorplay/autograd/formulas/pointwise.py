"""Backward helpers for the pointwise ops (see derivatives.yaml)."""
