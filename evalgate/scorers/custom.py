"""A user's own scorer: `type: python` in a spec, `@evalgate.scorer` in Python."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, overload

from pydantic import Field

from evalgate.load.spec.context import BuildContext
from evalgate.run.overruns import Overran, Overruns, StillRunning
from evalgate.run.user_code import FunctionReference, copied, import_callable
from evalgate.scorers.base import Scorer
from evalgate.scorers.registry import scorer_type


def _two_args(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Call fn(item, run), or fn(run) when it takes one argument."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        return fn
    if len(params) == 1 and params[0].kind is not inspect.Parameter.VAR_POSITIONAL:
        return lambda item, run: fn(run)
    return fn


@scorer_type("python")
def python(
    function: FunctionReference,
    higher_is_better: bool = True,
    timeout_s: Annotated[float, Field(gt=0, le=86_400, allow_inf_nan=False)] = 30.0,
    *,
    ctx: BuildContext,
) -> Scorer:
    """The score your function returns: fn(item, run) -> number in [0, 1], (number, reason) or NotScorable.

    A call that runs over `timeout_s` errors that result (the call is left to finish in the background).
    """
    fn = import_callable(function, ctx.base_dir)
    return Scorer(id="", fn=_bounded(_two_args(fn), timeout_s), higher_is_better=higher_is_better)


class ScorerTimeout(Exception):
    pass


def _bounded(fn: Callable[..., Any], timeout_s: float) -> Callable[..., Any]:
    """fn(item, run) on a helper thread, waited for at most `timeout_s`; sys.exit and the like become errors."""
    overruns = Overruns()

    def guarded(item: Any, run: Any) -> Any:
        try:  # copies: a scorer that edited the run (cleared its tool calls) changed later checks and the results
            return fn(copied(item), copied(run))
        except Exception:
            raise
        except BaseException as exc:  # the scorer's own sys.exit: an ordinary error of this result
            raise RuntimeError(f"the scorer raised {type(exc).__name__}: {exc}") from None

    def call(item: Any, run: Any) -> Any:
        try:
            return overruns.call(guarded, (item, run), timeout_s, "evalgate-scorer")
        except Overran:
            raise ScorerTimeout(f"the scorer ran over {timeout_s:g}s") from None
        except StillRunning as exc:
            raise ScorerTimeout(str(exc)) from None

    return call


@overload
def scorer(fn: Callable[..., Any], *, id: str | None = None, higher_is_better: bool = True) -> Scorer: ...


@overload
def scorer(
    fn: None = None, *, id: str | None = None, higher_is_better: bool = True
) -> Callable[[Callable[..., Any]], Scorer]: ...


def scorer(
    fn: Callable[..., Any] | None = None, *, id: str | None = None, higher_is_better: bool = True
) -> Scorer | Callable[[Callable[..., Any]], Scorer]:
    """Make a function of (item, run) or (run) a Scorer; usable bare or with arguments."""

    def wrap(f: Callable[..., Any]) -> Scorer:
        return Scorer(id=id or f.__name__, fn=_two_args(f), higher_is_better=higher_is_better)

    return wrap(fn) if fn is not None else wrap


def as_scorer(value: Any) -> Scorer:
    """A Scorer from a Scorer or a plain function (named after it)."""
    if isinstance(value, Scorer):
        return value
    if callable(value):
        function: Callable[..., Any] = value
        return scorer(function)
    raise TypeError(f"expected a scorer or a function of (item, run), got {type(value).__name__}")
