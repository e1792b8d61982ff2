"""The ``Sketch`` protocol: distributions that draw a sketch matrix ``R = W S``.

A drawn sketch is a :class:`~sprokr.numerics.SketchMatrix` (re-exported here as
``sprokr.sketches.SketchMatrix``): ``R = W S`` where ``S`` sub-samples the ``m'``
non-null columns of ``R`` and ``W`` (m x m') holds their values, so that
``K R^T = K[:, indices] W^T`` needs only ``n m'`` kernel values.  Sub-sampling has
``m' = m``; p-sparsified sketches have ``E[m'] = n (1 - (1 - p)^m)``; Gaussian sketches
and CountSketch have ``m' = n`` (they need the whole Gram matrix and serve as baselines).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

from sklearn.base import BaseEstimator

from ..numerics import SketchMatrix
from ..registry import get_registry
from ..utils import check_integer, check_params_mapping, check_random_state, reword_error

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import RandomStateLike

__all__ = ["Sketch", "SketchMatrix", "resolve_sketch", "make_sketch", "check_sketch_for", "drawing_state"]


def drawing_state(random_state: RandomStateLike, rng: Any = None) -> Any:
    """What an estimator passes to :meth:`Sketch.draw`: its generator ``rng`` (made from its
    ``random_state`` when not given), or None when its ``random_state`` is None -- then a
    sketch's own ``random_state`` (a seeded instance, or ``*_sketch_params``) draws it, and
    an estimator seed, when given, overrides the sketch's.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or RandomState
        The estimator's ``random_state`` parameter.
    rng : numpy.random.Generator, optional
        The estimator's generator made from it, when it draws other things from the same
        stream (its sketches in turn, a validation split): passed on as it is.
    """
    if random_state is None:
        return None
    return check_random_state(random_state) if rng is None else rng


class Sketch(BaseEstimator):
    """Base class of sketch distributions.  Subclasses implement ``_draw(n, rng)``.

    Parameters common to all: ``m`` (sketch size, 1 <= m <= n) and ``random_state``
    (None, int or ``numpy.random.Generator``).  ``draw(n)`` returns a
    :class:`SketchMatrix`; the same seed gives the same matrix.
    """

    name: Optional[str] = None
    #: True when every column of R may be non-null (needs the full Gram matrix)
    dense_columns = False

    def draw(self, n: int, random_state: RandomStateLike = None) -> SketchMatrix:
        """Draw a sketch matrix for ``n`` samples (an integer >= 1).

        ``random_state`` (if given) overrides ``self.random_state``; an estimator passes
        :func:`drawing_state` of its own: its generator, so that ``SISOKR(random_state=0)``
        is reproducible, or None when its ``random_state`` is None (the sketch's own
        ``random_state`` then draws).
        """
        n = _check_n_samples(n)  # here, not (only) in validate: subclasses override validate
        self.validate(n)
        rs = self.random_state if random_state is None else random_state
        return self._draw(n, check_random_state(rs))

    def check_params(self) -> Self:
        """Validate the parameters that need no number of samples; returns self.

        Base class: the size ``m`` (an integer >= 1) of a sketch that has one.  Subclasses
        add their own parameters (``p``, ``distribution``, ``m_acc``, ``probabilities``) and
        call this first.  Changes nothing.  Raises ``ValueError`` naming the parameter.
        :func:`make_sketch` calls it when an estimator's parameters are checked, and
        :meth:`validate` before the checks against ``n``.
        """
        if hasattr(self, "m"):
            _check_sketch_size_value(self.m, "m")
        return self

    def validate(self, n: int) -> None:
        """Raise ``ValueError`` if this sketch cannot be drawn for ``n`` samples
        (:meth:`check_params`, then the size ``m`` at most ``n``)."""
        n = _check_n_samples(n)
        self.check_params()
        _check_sketch_size(getattr(self, "m", None), n, "m")

    def _draw(self, n, rng):  # pragma: no cover - abstract
        raise NotImplementedError


def _check_n_samples(n: Any) -> int:
    """``n`` (the number of samples a sketch is drawn for) as an int, or a ``ValueError``
    naming n_samples unless it is an integer >= 1.  Floats are refused, 10.0 too (a count;
    ``draw(10.5)`` was truncated to 10), and bools."""
    return check_integer(n, "n_samples")


def _check_sketch_size(m: Any, n: int, name: str) -> None:
    """Raise ``ValueError`` unless ``m`` is an integer in [1, n]; ``name`` is the argument that
    set it (``m`` of a sketch, or ``m_x`` / ``m_y`` of an estimator).  Floats are refused,
    10.0 too: a size is a count."""
    _check_sketch_size_value(m, name)
    if int(m) > n:
        raise ValueError(f"sketch size {name}={m} is larger than the number of samples n_samples={n}")


def _check_sketch_size_value(m: Any, name: str) -> None:
    """The part of :func:`_check_sketch_size` that needs no ``n``: an integer >= 1."""
    check_integer(m, f"sketch size {name}")


def resolve_sketch(spec: str | Sketch | None, m: int | None, params: Mapping[str, Any] | None, n: int,
                   side: str) -> Sketch | None:
    """Sketch instance validated for ``n`` samples, or None (no sketching).

    :func:`make_sketch` (the checks that need no data), then :func:`check_sketch_for` ``n``.

    Parameters
    ----------
    spec : str, Sketch or None
        Registered sketch name or sketch instance (``{side}_sketch`` of the estimator);
        None: no sketching.
    m : int or None
        Sketch size for a sketch given by name (``m_x`` / ``m_y`` of the estimators).
    params : dict or None
        Factory parameters of a sketch given by name (``{side}_sketch_params``).
    n : int
        Number of samples the sketch will be drawn for.
    side : {"input", "output"}
        Names the estimator parameter in error messages.
    """
    return check_sketch_for(make_sketch(spec, m, params, side), spec, m, n, side)


def _uses_m(spec: str | Sketch) -> bool:
    """Whether the estimator's sketch size applies to ``spec`` (identity ignores it)."""
    return spec != "identity" if isinstance(spec, str) else hasattr(spec, "m")


def make_sketch(spec: str | Sketch | None, m: int | None, params: Mapping[str, Any] | None,
                side: str) -> Sketch | None:
    """The sketch of one side of an estimator, checked without data, or None (no sketching).

    Checks what needs no number of samples: ``params`` is a mapping, ``m`` and ``params``
    are not given without a sketch, a named sketch has a size ``m`` (an integer >= 1), the
    name is registered and its factory accepts the parameters, an instance's ``m`` agrees
    with ``m``.  Raises ``ValueError`` or ``TypeError`` naming the estimator's parameters
    (``{side}_sketch``, ``m_x`` / ``m_y``, ``{side}_sketch_params``).  The sketch instance
    given is returned unchanged (not copied, not modified); a named one is created.

    Parameters
    ----------
    spec : str, Sketch or None
        Registered sketch name or sketch instance (``{side}_sketch`` of the estimator);
        None: no sketching.
    m : int or None
        Sketch size for a sketch given by name (``m_x`` / ``m_y`` of the estimators).
    params : dict or None
        Factory parameters of a sketch given by name (``{side}_sketch_params``).
    side : {"input", "output"}
        Names the estimator parameter in error messages.

    Returns
    -------
    Sketch or None
    """
    letter = {"input": "x", "output": "y"}[side]
    params = check_params_mapping(params, f"{side}_sketch_params")
    if spec is None:
        if m is not None:
            raise ValueError(f"m_{letter}={m} was given but {side}_sketch is None")
        if params:  # ({} is as good as None: nothing would be ignored)
            raise ValueError(f"{side}_sketch_params={params!r} was given but {side}_sketch is None")
        return None
    uses_m = _uses_m(spec)
    if isinstance(spec, str) and uses_m:
        if m is None:
            raise ValueError(f"{side}_sketch={spec!r} needs a sketch size m_{letter}")
        params["m"] = m
    # the prefix says which sketch (SISOKR has two): the registry's messages say "sketch"
    try:
        if m is not None and uses_m:  # here, not in sketch.validate: the message says m_x / m_y
            _check_sketch_size_value(m, f"m_{letter}")
        sketch = get_registry().create("sketch", spec, params, base=Sketch)
        check = getattr(sketch, "check_params", None)  # (a third-party sketch may lack it)
        if callable(check):
            check()  # the sketch's own parameters (p, m_acc, ...), without data
    except (ValueError, TypeError) as exc:
        raise reword_error(exc, f"{side}_sketch: {exc}")
    if not isinstance(spec, str) and m is not None and getattr(sketch, "m", m) != m:
        raise ValueError(f"m_{letter}={m} differs from the sketch instance's m={sketch.m}")
    return sketch


def check_sketch_for(sketch: Sketch | None, spec: str | Sketch | None, m: int | None, n: int,
                     side: str) -> Sketch | None:
    """``sketch`` (from :func:`make_sketch` of ``spec`` and ``m``), checked for ``n`` samples:
    the size ``m`` at most ``n`` and the sketch's own ``validate(n)``; ``ValueError``
    naming the estimator's parameters otherwise.

    Parameters
    ----------
    sketch : Sketch or None
        The sketch made by :func:`make_sketch` (None: no sketching, returned as is).
    spec : str, Sketch or None
        What ``sketch`` was made from (``{side}_sketch`` of the estimator);
        None: no sketching.
    m : int or None
        Sketch size for a sketch given by name (``m_x`` / ``m_y`` of the estimators).
    n : int
        Number of samples the sketch will be drawn for.
    side : {"input", "output"}
        Names the estimator parameter in error messages.

    Returns
    -------
    Sketch or None
        ``sketch``.
    """
    if sketch is None:
        return None
    letter = {"input": "x", "output": "y"}[side]
    try:
        if m is not None and spec is not None and _uses_m(spec):
            _check_sketch_size(m, n, f"m_{letter}")
        sketch.validate(n)
    except ValueError as exc:
        raise reword_error(exc, f"{side}_sketch: {exc}")
    return sketch
