"""The data the training benchmark and examples/train_ddp.py train on: scikit-learn's 8x8
digits (shipped with scikit-learn: no download)."""

from __future__ import annotations

__all__ = ["digits"]


def digits(seed=0):
    """(x_train, y_train, x_test, y_test) as torch tensors: float32 pixels in [0, 1],
    int64 labels, a stratified quarter held out (``seed`` picks the split)."""
    import numpy as np
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, d.target, test_size=0.25, random_state=seed,
                                          stratify=d.target)
    return (torch.from_numpy(xtr), torch.from_numpy(ytr).long(),
            torch.from_numpy(xte), torch.from_numpy(yte).long())
