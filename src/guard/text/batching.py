"""Token-id windows of different lengths, in padded batches for an encoder."""
import numpy as np

BATCH = 32


def padded_batches(windows, pad):
    """(ids, mask) per batch of up to BATCH windows: ids padded with `pad`, mask 1 where a token is."""
    for at in range(0, len(windows), BATCH):
        batch = windows[at:at + BATCH]
        width = max(len(w) for w in batch)
        ids = np.full((len(batch), width), pad, np.int64)
        mask = np.zeros((len(batch), width), np.int64)
        for i, w in enumerate(batch):
            ids[i, :len(w)] = w
            mask[i, :len(w)] = 1
        yield ids, mask


def mean_pooled(hidden, mask):
    """The mean of each window's token vectors over its mask, L2-normalised."""
    pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
