"""torch/nn/modules/utils.py's public helper for checkpoints."""

__all__ = ["consume_prefix_in_state_dict_if_present"]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip `prefix` from the keys of `state_dict` that start with it, in place: a state
    dict saved from a DataParallel / DistributedDataParallel model ('module.' before every
    key) then loads into the bare model. The `_metadata` a state dict carries is renamed
    the same way ('module' itself becomes '')."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
