"""Backward helpers for the indexing ops (see derivatives.yaml)."""
