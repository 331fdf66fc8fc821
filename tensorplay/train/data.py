"""The data the training command learns from.

    digits:  scikit-learn's handwritten digits (1,797 images of 8x8 pixels, values 0..16),
             scaled to [0, 1], split 80/20 with every class in the same proportion
    text:    corpus.txt (public-domain English verse), one character a token, cut into
             windows of `context` characters whose targets are the next characters

Both come back as tp.utils.data.TensorDataset pairs, ready for a DataLoader.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np

import tensorplay as tp
from tensorplay.utils.data import TensorDataset

DIGIT_CLASSES = 10
DIGIT_SIZE = 8          # the images are 8x8
DIGIT_MAX = 16.0        # pixel values are counts 0..16


@dataclass
class Split:
    """A train/test pair of datasets and what the model needs to know about them."""
    train: TensorDataset
    test: TensorDataset
    num_classes: int


def digits(seed, limit=None, test_size=0.2):
    """The digits as (N, 1, 8, 8) float32 images in [0, 1] and int64 labels.

    Args:
        seed: random_state of the stratified split (the same seed, the same split).
        limit: keep only the first `limit` training examples (the test set stays whole).
        test_size: the held-out fraction.
    Returns:
        a Split of TensorDatasets (images, labels).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    images = (images / DIGIT_MAX).astype(np.float32).reshape(-1, 1, DIGIT_SIZE, DIGIT_SIZE)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=test_size, stratify=labels, random_state=seed)
    if limit is not None:
        x_train, y_train = x_train[:limit], y_train[:limit]
    return Split(train=TensorDataset(tp.tensor(x_train), tp.tensor(y_train.astype(np.int64))),
                 test=TensorDataset(tp.tensor(x_test), tp.tensor(y_test.astype(np.int64))),
                 num_classes=DIGIT_CLASSES)


def corpus_text():
    """The text of corpus.txt, without its header line (which names the sources)."""
    text = resources.files("tensorplay.train").joinpath("corpus.txt").read_text("utf-8")
    return text.split("\n", 1)[1]


class Vocabulary:
    """Characters <-> token ids: every distinct character of the text, sorted."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.ids = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        unknown = sorted(set(text) - self.ids.keys())
        if unknown:
            raise ValueError(f"characters {unknown} are not in the vocabulary "
                             f"({len(self.chars)} characters of corpus.txt)")
        return np.array([self.ids[c] for c in text], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


def windows(tokens, context):
    """Every `context`-long window of `tokens` starting at a multiple of context // 2, and
    its targets, the same window shifted one token right:

        tokens   t0 t1 t2 t3 t4 ...      inputs   [t0 t1 t2 t3]  [t2 t3 t4 t5] ...
        context  4                       targets  [t1 t2 t3 t4]  [t3 t4 t5 t6] ...
    """
    stride = max(1, context // 2)
    starts = np.arange(0, len(tokens) - context, stride)
    index = starts[:, None] + np.arange(context)[None, :]
    return tokens[index], tokens[index + 1]


def text(context, limit=None, test_fraction=0.1):
    """corpus.txt as windows of `context` token ids; the last tenth of the text is the test
    set (a split by position, so no test window overlaps a training one).

    Args:
        context: characters a window holds.
        limit: keep only the first `limit` training windows.
    Returns:
        (Split of TensorDatasets (inputs, targets), Vocabulary).
    """
    body = corpus_text()
    vocab = Vocabulary(body)
    tokens = vocab.encode(body)
    cut = int(len(tokens) * (1 - test_fraction))
    x_train, y_train = windows(tokens[:cut], context)
    x_test, y_test = windows(tokens[cut:], context)
    if limit is not None:
        x_train, y_train = x_train[:limit], y_train[:limit]
    split = Split(train=TensorDataset(tp.tensor(x_train), tp.tensor(y_train)),
                  test=TensorDataset(tp.tensor(x_test), tp.tensor(y_test)),
                  num_classes=len(vocab))
    return split, vocab
