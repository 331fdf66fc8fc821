"""Backward helpers for the nn_layers ops (see derivatives.yaml)."""
