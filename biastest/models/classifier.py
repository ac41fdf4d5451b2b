"""A small PyTorch binary classifier (MLP or logistic regression), trained seeded and returned as numpy weights.

Used by :func:`biastest.measures.posterior.score.train_classifier` (the classifier
``p(+ | s)`` on word embeddings of Liang & Acuna 2020), which keeps the
train/test split and the evaluation in numpy; the torch part is here.

Examples
--------
>>> import numpy as np
>>> from biastest.models.classifier import fit_binary_mlp
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=(40, 3)).astype(np.float32)
>>> y = (x[:, 0] > 0).astype(np.float32)
>>> [w.shape for w, _ in fit_binary_mlp(x, y, seed=0, hidden=4, epochs=5)]
[(3, 4), (4, 1)]
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

__all__ = ["fit_binary_mlp"]


def fit_binary_mlp(
    x: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    hidden: int = 8,
    epochs: int = 200,
    lr: float = 0.01,
    weight_decay: float = 1e-3,
) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Train the logit of ``p(+ | x)`` with full-batch Adam on class-weighted binary cross-entropy.

    The network is ``Linear(d, hidden) → tanh → Linear(hidden, 1)`` (or one
    ``Linear(d, 1)``, logistic regression, when ``hidden == 0``) with torch's
    default initialisation. The positive class is weighted by
    ``#negatives / max(#positives, 1)`` (``BCEWithLogitsLoss(pos_weight=...)``).

    Parameters
    ----------
    x : ndarray (n, d) of float32
        Training inputs (float32, as torch's linear layers expect).
    y : ndarray (n,) of float32
        Training labels, 0 or 1.
    seed : int
        Seeds the weight initialisation; torch's global random generator is
        left untouched (``torch.random.fork_rng``).
    hidden : int
        Units of the single tanh hidden layer; ``0`` gives logistic regression.
    epochs : int
        Full-batch Adam steps.
    lr, weight_decay : float
        Adam's learning rate and (L2) weight decay.

    Returns
    -------
    tuple of (W, b)
        One pair per linear layer, float64: ``W`` of shape ``(in, out)`` and
        ``b`` of shape ``(out,)``, so that a layer is ``h @ W + b``.
    """
    import torch  # late: heavy

    xtr, ytr = torch.from_numpy(x), torch.from_numpy(y)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        dims = [x.shape[1], hidden, 1] if hidden > 0 else [x.shape[1], 1]
        linears = [torch.nn.Linear(a, b) for a, b in pairwise(dims)]
        mods: list[torch.nn.Module] = []
        for i, lin in enumerate(linears):
            mods.append(lin)
            if i < len(linears) - 1:
                mods.append(torch.nn.Tanh())
        net = torch.nn.Sequential(*mods)
        opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
        pos_weight = torch.tensor(float((ytr == 0).sum() / max(float((ytr == 1).sum()), 1.0)))
        loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)
        for _ in range(epochs):
            opt.zero_grad()
            loss = loss_fn(net(xtr)[:, 0], ytr)
            loss.backward()
            opt.step()
    return tuple(
        (lin.weight.detach().numpy().T.astype(np.float64).copy(), lin.bias.detach().numpy().astype(np.float64).copy())
        for lin in linears
    )
