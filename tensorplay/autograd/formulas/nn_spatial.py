"""Backward helpers for the nn_spatial ops (see derivatives.yaml)."""
