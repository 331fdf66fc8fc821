"""Backward helpers for the reduction ops (see derivatives.yaml)."""
