"""Built-in sketch distributions.  All satisfy ``E[R^T R] = I_n``.

* :class:`SubSample`  -- Nystrom: rows of ``sqrt(n/m) I`` (uniform, without replacement),
  or importance sampling ``e_i / sqrt(m p_i)`` with given probabilities (with replacement).
* :class:`GaussianSketch` -- ``R_ij ~ N(0, 1/m)``.
* :class:`PSparsified` -- ``R_ij = B_ij G_ij / sqrt(m p)``, ``B ~ Bernoulli(p)``, ``G``
  Rademacher (p-SR) or standard normal (p-SG); only non-null columns are kept.
* :class:`Accumulation` -- sum of ``m_acc`` scaled sub-sampling sketches with random signs
  (Chen & Yang, 2021), divided by ``sqrt(m_acc)``.
* :class:`CountSketch` -- one +-1 per column at a uniformly random row.
* :class:`IdentitySketch` -- ``R = I_n`` (no sketching; for exactness checks).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
import scipy.sparse as sp

from ..utils import check_fraction, check_integer
from ..numerics import SketchMatrix
from .base import Sketch

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import RandomStateLike

__all__ = [
    "SubSample",
    "GaussianSketch",
    "PSparsified",
    "Accumulation",
    "CountSketch",
    "IdentitySketch",
]


class SubSample(Sketch):
    """Sub-sampling (Nystrom) sketch.

    Parameters
    ----------
    m : int
        Number of sampled points.
    probabilities : array-like of shape (n,), optional
        Sampling probabilities (e.g. approximate leverage scores); normalised to sum 1.
        Sampling is then with replacement and rows are ``e_i / sqrt(m p_i)``.
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "subsample"

    def __init__(self, m: int = 100, probabilities: ArrayLike | None = None,
                 random_state: RandomStateLike = None) -> None:
        self.m = m
        self.probabilities = probabilities
        self.random_state = random_state

    def check_params(self) -> Self:
        """``m`` and, when given, ``probabilities``: a 1-D array of finite, non-negative
        numbers (not booleans), not all zero (its length is checked against ``n`` by
        :meth:`validate`)."""
        super().check_params()
        if self.probabilities is not None:
            try:
                given = np.asarray(self.probabilities)
                p = given.astype(float)
            except (TypeError, ValueError):
                raise ValueError(f"probabilities must be an array of numbers, got {self.probabilities!r}") from None
            if given.dtype == np.bool_:  # a mask is no sampling weights (True would silently be 1.0)
                raise ValueError("probabilities must be an array of numbers (sampling weights, one per sample), "
                                 "got an array of booleans; for a mask give its 0 / 1 weights as floats")
            if p.ndim != 1:
                raise ValueError(f"probabilities must be 1-D (one per sample), got shape {p.shape}")
            if not np.isfinite(p).all() or (p < 0).any() or p.sum() <= 0:
                raise ValueError("probabilities must be finite, non-negative and not all zero")
        return self

    def validate(self, n: int) -> None:
        super().validate(n)
        if self.probabilities is not None:
            p = np.asarray(self.probabilities, dtype=float)
            if p.shape != (n,):
                raise ValueError(f"probabilities must have shape ({n},), got {p.shape}")

    def _draw(self, n, rng):
        m = self.m
        if self.probabilities is None:
            idx = np.sort(rng.choice(n, size=m, replace=False))
            W = sp.identity(m, format="csr") * np.sqrt(n / m)
            return SketchMatrix(n, idx, W.tocsr(), scale=np.sqrt(n / m))
        p = np.asarray(self.probabilities, dtype=float)
        p = p / p.sum()
        cols = rng.choice(n, size=m, replace=True, p=p)
        vals = 1.0 / np.sqrt(m * p[cols])
        return SketchMatrix.from_coo(n, m, np.arange(m), cols, vals, dense=False)


class GaussianSketch(Sketch):
    """Gaussian sketch ``R_ij ~ N(0, 1/m)`` (all n columns non-null: a baseline).

    Parameters
    ----------
    m : int, default=100
        Sketch size (number of rows, 1 <= m <= n).
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "gaussian"
    dense_columns = True

    def __init__(self, m: int = 100, random_state: RandomStateLike = None) -> None:
        self.m = m
        self.random_state = random_state

    def _draw(self, n, rng):
        W = rng.standard_normal((self.m, n)) / np.sqrt(self.m)
        return SketchMatrix(n, np.arange(n), W)


class PSparsified(Sketch):
    """p-sparsified sketch (El Ahmad et al.): ``R_ij = B_ij G_ij / sqrt(m p)``.

    Only the non-null columns are stored (decomposition trick): with ``E[m'] =
    n (1 - (1 - p)^m)`` selected points, ``K R^T`` needs ``n m'`` kernel values.

    A draw keeps at least one non-null entry (an all-zero sketch carries no information),
    so ``E[R^T R] = I`` holds up to the probability ``(1 - p)^(m n)`` of an empty draw:
    negligible at the papers' ``p = 20 / n`` (``e^-20m``), but when ``m n p`` is about 1 the
    expectation is inflated (``m = 3, p = 0.02, n = 8``: mean diagonal 2.3).

    Parameters
    ----------
    m : int, default=100
        Sketch size.
    p : float in (0, 1], default=0.01
        Probability that an entry is non-null (the papers use ``p = 20 / n`` ... ``1``).
    distribution : {"rademacher", "gaussian"}, default="rademacher"
        ``G`` Rademacher (p-SR) or standard normal (p-SG).
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "psparsified"

    def __init__(self, m: int = 100, p: float = 0.01, distribution: str = "rademacher",
                 random_state: RandomStateLike = None) -> None:
        self.m = m
        self.p = p
        self.distribution = distribution
        self.random_state = random_state

    def check_params(self) -> Self:
        """``m``, ``p`` (in (0, 1]) and ``distribution``."""
        super().check_params()
        check_fraction(self.p, "p")
        if self.distribution not in ("rademacher", "gaussian"):
            raise ValueError(
                f"distribution must be 'rademacher' or 'gaussian', got {self.distribution!r}"
            )
        return self

    def _draw(self, n, rng):
        m, p = self.m, float(self.p)
        total = m * n
        k = rng.binomial(total, p)
        k = max(k, 1)  # an all-zero sketch carries no information
        flat = np.sort(rng.choice(total, size=k, replace=False))
        rows, cols = np.divmod(flat, n)
        if self.distribution == "rademacher":
            vals = rng.choice(np.array([-1.0, 1.0]), size=k)
        else:
            vals = rng.standard_normal(k)
        vals /= np.sqrt(m * p)
        # small p (the papers' 20/n): W is sparse, and its products are sparse products
        return SketchMatrix.from_coo(n, m, rows, cols, vals, dense="auto")


class PSR(PSparsified):
    """p-SR: p-sparsified sketch with Rademacher entries (see :class:`PSparsified`).

    Parameters
    ----------
    m : int, default=100
        Sketch size (number of rows, 1 <= m <= n).
    p : float in (0, 1], default=0.01
        Probability that an entry is non-null.
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "psr"

    def __init__(self, m: int = 100, p: float = 0.01, random_state: RandomStateLike = None) -> None:
        super().__init__(m=m, p=p, distribution="rademacher", random_state=random_state)


class PSG(PSparsified):
    """p-SG: p-sparsified sketch with Gaussian entries (see :class:`PSparsified`).

    Parameters
    ----------
    m : int, default=100
        Sketch size (number of rows, 1 <= m <= n).
    p : float in (0, 1], default=0.01
        Probability that an entry is non-null.
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "psg"

    def __init__(self, m: int = 100, p: float = 0.01, random_state: RandomStateLike = None) -> None:
        super().__init__(m=m, p=p, distribution="gaussian", random_state=random_state)


class Accumulation(Sketch):
    """Accumulation sketch (Chen & Yang, 2021): ``R = m_acc^-1/2 sum_j D_j S_j``.

    Each ``S_j`` picks, for every row, one column uniformly at random (scaled by
    ``sqrt(n/m)``) and ``D_j`` flips signs at random.

    Parameters
    ----------
    m : int, default=100
        Sketch size (number of rows, 1 <= m <= n).
    m_acc : int >= 1, default=20
        Number of accumulated sub-sampling sketches ``S_j``.
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "accumulation"

    def __init__(self, m: int = 100, m_acc: int = 20, random_state: RandomStateLike = None) -> None:
        self.m = m
        self.m_acc = m_acc
        self.random_state = random_state

    def check_params(self) -> Self:
        """``m`` and ``m_acc`` (an integer >= 1)."""
        super().check_params()
        check_integer(self.m_acc, "m_acc")  # (a bool is refused: m_acc=True would silently mean one sketch)
        return self

    def _draw(self, n, rng):
        m, a = self.m, self.m_acc
        rows = np.tile(np.arange(m), a)
        cols = rng.integers(0, n, size=m * a)
        vals = rng.choice(np.array([-1.0, 1.0]), size=m * a) * np.sqrt(n / m) / np.sqrt(a)
        return SketchMatrix.from_coo(n, m, rows, cols, vals, dense=False)


class CountSketch(Sketch):
    """CountSketch: column j holds a single random sign at row ``h(j)`` (needs the full Gram).

    Parameters
    ----------
    m : int, default=100
        Sketch size (number of rows, 1 <= m <= n).
    random_state : None, int or numpy.random.Generator
        Seed or generator of the draws (a ``random_state`` given to :meth:`draw` overrides it).
    """

    name = "countsketch"
    dense_columns = True

    def __init__(self, m: int = 100, random_state: RandomStateLike = None) -> None:
        self.m = m
        self.random_state = random_state

    def _draw(self, n, rng):
        rows = rng.integers(0, self.m, size=n)
        vals = rng.choice(np.array([-1.0, 1.0]), size=n)
        W = sp.csr_matrix((vals, (rows, np.arange(n))), shape=(self.m, n))
        return SketchMatrix(n, np.arange(n), W)


class IdentitySketch(Sketch):
    """The identity ``R = I_n`` (``m`` is ignored and set to n): no sketching.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        Accepted as by every sketch; the identity draws nothing at random.
    """

    name = "identity"

    def __init__(self, random_state: RandomStateLike = None) -> None:
        self.random_state = random_state

    def validate(self, n: int) -> None:
        if n < 1:
            raise ValueError("need at least one sample")

    def _draw(self, n, rng):
        return SketchMatrix(n, np.arange(n), sp.identity(n, format="csr"), scale=1.0)
