"""Checkers for the write-it-yourself exercises.

Used by the exercises of the chapters *scaled-dot-product*, *self-attention* and
*multi-head*: the student writes a piece of attention, then checks it in one line::

    from qkv.check import check_scaled_dot_product_attention

    check_scaled_dot_product_attention(my_attention, masks=False)

A checker runs the student's code on the cases that matter (no batch dim, one and
two batch dims, L != S, Ev != E, cross-attention, boolean masks of several
broadcast shapes, a query that may attend to nothing, gradients) and compares it
with the reference in :mod:`qkv.attention`. When every case passes it returns a
:class:`CheckResult` that lists them. Otherwise it raises ``AssertionError`` naming
the first case that failed, how the student's code was called, what was expected
and what came back (the shapes, or the largest difference and where), and a hint
when the result matches a typical mistake: no scaling, a mask ignored or
inverted, the softmax over the wrong dimension, heads split the wrong way, NaN for
a query that may attend to nothing. When the student's code raises, or returns
something that is not a tensor, the message says so and names the case; the
student's own exception is chained to it.

The checkers follow the conventions of :mod:`qkv.attention`: masks are boolean
with ``True`` = may attend, and a query that may attend to nothing gets zero
weights and a zero output, never NaN. The masks are only taught in the chapter
*masking*; exercises of earlier chapters pass ``masks=False``.

A case that runs longer than :data:`CASE_SECONDS` (a loop that never ends) is
stopped and reported as a failure of that case (where the platform has
``SIGALRM`` and the checker runs in the main thread, as in a notebook; on
Windows there is no limit).

Inputs are float32 (what a student's code makes by default) and come from a
private, seeded ``torch.Generator``; everything runs inside
``torch.random.fork_rng``, so the cases are the same at every run and a checker
never changes the global random state of the student's notebook.

Shape legend (as in :mod:`qkv.attention`):

    ...  any number of leading batch dimensions
    B    batch size
    H    number of heads
    T    sequence length (self-attention)
    L    query length
    S    key and value length
    D    model (embedding) dimension
    E    feature dimension of queries and keys (per head: E = D / H)
    Ev   feature dimension of values
"""

from __future__ import annotations

import contextlib
import math
import re
import signal
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import torch
from torch import Tensor, nn

from qkv.attention import (
    MultiHeadAttention,
    SelfAttention,
    causal_mask,
    concat_heads,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)
from qkv.language import N_, format_number
from qkv.language import gettext as _

__all__ = [
    "CheckResult",
    "check_multi_head_attention",
    "check_scaled_dot_product_attention",
    "check_self_attention",
    "check_split_heads",
]

_SEED = 2017  # the cases are drawn from torch.Generator().manual_seed(_SEED)
_ATOL = 1e-5  # float32, with room for a correct code's other order of operations
_RTOL = 1e-4

# A function of (query, key, value, attn_mask) -> (output, weights).
_Attention = Callable[[Tensor, Tensor, Tensor, Tensor | None], tuple[Tensor, Tensor]]
# A list of (hint, result): what a typical mistake gives on the same inputs.
_Mistakes = list[tuple[str, Any]]


class _Say:
    """A text of a message, written in the current language when it is shown
    (:func:`qkv.set_language`): its English, looked up in :data:`MESSAGES`,
    then filled with ``values``."""

    __slots__ = ("english", "values")

    def __init__(self, english: str, **values: Any) -> None:
        self.english = english
        self.values = values

    def format(self, **values: Any) -> _Say:
        return _Say(self.english, **self.values, **values)

    def __str__(self) -> str:
        return _say(self.english, **self.values)


def _say(english: str, **values: Any) -> str:
    """``english`` in the current language, filled with ``values``."""
    return _(english).format(**values)


@dataclass(frozen=True, repr=False)
class CheckResult:
    """What a checker returns when every case passed; it prints as a list.

    Attributes:
        checker: the name of the checker that ran.
        cases: the cases that ran and passed, in order.
        skipped: the cases that did not run (the mask cases, with ``masks=False``).
        weights_unchecked: the cases in which the code returned only the output
            (or ``(output, None)``): there, only the output was checked.
    """

    checker: str
    cases: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    weights_unchecked: tuple[str, ...] = ()

    def __repr__(self) -> str:
        total = len(self.cases)
        lines = [
            _say("{checker}: all {n} cases passed.", checker=self.checker, n=total)
        ]
        lines += [f"  {i}. {case}" for i, case in enumerate(self.cases, 1)]
        if self.skipped:
            lines.append(
                _say("Not run (masks=False): {n} mask cases.", n=len(self.skipped))
            )
        unchecked = len(self.weights_unchecked)
        if unchecked:
            which = (
                _say("in every case")
                if unchecked == total
                else _say("in {unchecked} of the {total} cases", **locals())
            )
            lines.append(
                _say(
                    "Weights not checked: your code returned no weights {which}, so "
                    "only the output was checked. Return (output, weights) to have "
                    "the weights checked too.",
                    which=which,
                )
            )
        return "\n".join(lines)

    __str__ = __repr__


# --- hints: one typical mistake each ----------------------------------------

_NO_SCALE = _Say(
    "Your result matches attention WITHOUT the scaling. Did you divide the scores "
    "by sqrt(d_k)? (d_k = query.shape[-1], the size of each query and key.)"
)
_BY_DK = _Say(
    "Your result matches scores divided by d_k. Divide by sqrt(d_k) "
    "(math.sqrt(d_k)), not by d_k."
)
_TIMES_SQRT = _Say(
    "Your result matches scores multiplied by sqrt(d_k). Divide by sqrt(d_k) instead."
)
_WRONG_SIZE = _Say(
    "Your result matches scores divided by the square root of {what} ({size}). "
    "d_k is the size of each query and key vector, query.shape[-1] = {e}."
)
_SOFTMAX_DIM = _Say(
    "Your result matches a softmax over the wrong dimension. The softmax runs over "
    "the keys, the last dimension (dim=-1), so that each row of the weights sums "
    "to 1."
)
_SWAPPED_QK = _Say(
    "Your result matches attention with queries and keys swapped. The scores are "
    "query @ key.transpose(-2, -1): one row per query, one column per key."
)
_KEY_AS_VALUE = _Say(
    "Your result matches the weights multiplied by the keys. The output mixes the "
    "values: weights @ value."
)
_MASK_IGNORED = _Say(
    "Your result matches attention WITHOUT the mask: the mask was ignored. Apply it "
    "to the scores before the softmax, e.g. "
    "scores.masked_fill(~attn_mask, float('-inf'))."
)
_MASK_INVERTED = _Say(
    "Your result matches attention with the mask INVERTED. In this book, as in "
    "PyTorch, True means 'may attend': block the positions where the mask is "
    "False (~attn_mask), not those where it is True."
)
_MASK_ZERO = _Say(
    "Your result matches masked scores set to 0. A score of 0 still gets weight "
    "after the softmax (exp(0) = 1): set the masked scores to float('-inf')."
)
_MASK_AFTER = _Say(
    "Your result matches the weights multiplied by the mask after the softmax: "
    "the rows no longer sum to 1. Mask the scores before the softmax."
)
_MASKED_ROW_NAN = _Say(
    "A query whose mask row is all False got NaN: the softmax of a row of -inf is "
    "0/0. The book's convention is zero weights and a zero output for a query that "
    "may attend to nothing, never NaN: e.g. weights = weights.nan_to_num(0.0) "
    "after the softmax (see qkv.scaled_dot_product_attention)."
)
_MASKED_ROW_UNIFORM = _Say(
    "A query whose mask row is all False got equal weights on every key (the mean "
    "of the values): a large negative number in place of -inf does that. The "
    "book's convention is zero weights and a zero output for a query that may "
    "attend to nothing."
)
_NAN = _Say(
    "NaN usually comes from a softmax over a row of -inf, or from dividing by a "
    "sum of zero."
)
_WEIGHTS_TRANSPOSED = _Say(
    "Your weights are transposed: they have one row per query and one column per "
    "key, shape (..., L, S)."
)
_WEIGHTS_ARE_SCORES = _Say(
    "Your weights match the scores before the softmax. Return the weights, "
    "softmax(scores)."
)
_RAW_VALUE = _Say(
    "Your result matches attention whose values are the input x itself. Project "
    "them too: value = self.W_v(x)."
)
_RAW_QUERY_KEY = _Say(
    "Your result matches attention with x itself as queries and keys. Project "
    "them: query = self.W_q(x), key = self.W_k(x)."
)
_WEIGHT_NOT_TRANSPOSED = _Say(
    "Your result matches x @ W.weight. nn.Linear computes x @ W.weight.T + W.bias: "
    "call the layer, as in self.W_q(x)."
)
_SPLIT_NO_TRANSPOSE = _Say(
    "Your result matches heads split by reshaping (..., T, D) straight to "
    "(..., H, T, E). That cuts the numbers of the whole sequence into H blocks, so "
    "a head gets whole positions instead of a slice of the features. Reshape to "
    "(..., T, H, E), then .transpose(-3, -2): head h must hold the features "
    "h*E:(h+1)*E of every position."
)
_SPLIT_STRIDED = _Say(
    "Your result matches heads that take every H-th feature (head h got the "
    "features h, h+H, h+2H, ...). Reshape to (..., T, H, E), not (..., T, E, H): "
    "head h must hold the contiguous features h*E:(h+1)*E."
)
_SPLIT_NOT_TRANSPOSED = _Say(
    "Your result has the shape (..., T, H, E): the reshape is right but the "
    "transpose is missing. Swap the T and H dims with .transpose(-3, -2)."
)
_SPLIT_LENGTH = _Say(
    "Your result matches the sequence (T) cut into H pieces. Heads split the "
    "features: the last dim D becomes (H, E) with E = D / H, and every head sees "
    "every position."
)
_CONCAT_NO_TRANSPOSE = _Say(
    "Your result matches heads put back together by reshaping (..., H, T, E) "
    "straight to (..., T, D). Transpose back first, .transpose(-3, -2) to "
    "(..., T, H, E), then reshape to (..., T, D)."
)
_SCALE_MODEL_DIM = _Say(
    "Your result matches scores divided by sqrt(D) with D = embed_dim = {d}. "
    "Inside a head d_k is the head size E = D / H = {e}: divide by sqrt(E)."
)
_NO_OUTPUT_PROJECTION = _Say(
    "Your result matches the concatenated heads without the output projection. "
    "Apply self.W_o to the concatenated heads."
)
_QUERY_ONLY = _Say(
    "Your result matches self-attention over the query alone. Use the key and "
    "value arguments: K = self.W_k(key), V = self.W_v(value)."
)
_VALUE_FROM_KEY = _Say(
    "Your result matches values projected from the key argument. Project the "
    "value argument: V = self.W_v(value)."
)
_WEIGHTS_AVERAGED = _Say(
    "Your weights match the average over the heads (what "
    "torch.nn.MultiheadAttention returns by default). Return one map per head, "
    "shape (..., H, L, S), as qkv.MultiHeadAttention does."
)
_DETACHED = _Say(
    "Did you use .detach(), .item(), .numpy(), .data or torch.tensor(...) on a "
    "tensor that depends on the inputs? Each of these cuts the gradient."
)
_VIEW = _Say(
    ".view() needs a tensor whose memory layout fits the new shape; after a "
    "transpose it does not. Use .reshape(), which copies when it has to."
)
_MASK_ARGUMENT = _Say(
    "Does your {what} take the mask as its {nth} argument, {signature}? If your "
    "chapter has not covered masks yet, run {checker}(..., masks=False)."
)
_MASK_DEFAULT = _Say(
    "Your {what} asks for an argument that the call did not give. If it is the "
    "mask, give it the default None, as in {signature}: the cases without a mask "
    "call it without one."
)
_WEIGHTS_FIRST = _Say(
    "Your output matches the attention weights: did you return (weights, "
    "output)? Return the output first: return output, weights."
)
_BATCH_DIMS = {
    "attention": _Say(
        "Your code passed with {good} but fails with {bad}. To work with any number "
        "of leading batch dims, transpose with key.transpose(-2, -1) (key.T "
        "reverses every dim) and count dims from the end (dim=-1)."
    ),
    "split": _Say(
        "Your code passed with {good} but fails with {bad}. To work with any number "
        "of leading batch dims, unpack the shape as *batch, T, D = x.shape, reshape "
        "to (*batch, T, H, E) and count dims from the end: .transpose(-3, -2)."
    ),
}
_BATCH_DIMS["heads"] = _Say(
    "Your code passed with {good} but fails with {bad}. To work with any number "
    "of leading batch dims, unpack the shape as *batch, T, D = x.shape, reshape "
    "to (*batch, T, H, E) and count dims from the end: .transpose(-3, -2). The "
    "same holds for key.transpose(-2, -1) and dim=-1."
)


# --- messages ------------------------------------------------------------------

_TUPLE = re.compile(r"\((?:[\w.*]+, )+[\w.*]*\)|\[(?:[-\w.]+, )*[-\w.]+\]")


def _wrap(paragraph: str, width: int = 88) -> str:
    """Wrap a paragraph of a message, never inside a shape like (2, 4, 8)."""
    kept = _TUPLE.sub(lambda m: m.group(0).replace(" ", "\0"), paragraph)
    lines = textwrap.wrap(
        kept,
        width,
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(lines).replace("\0", " ")


def _shape(x: Any) -> str:
    if isinstance(x, Tensor):
        return str(tuple(x.shape)) if x.dim() != 1 else f"({x.shape[0]},)"
    return type(x).__name__


def _dims(n: int) -> str:
    return _say(
        {0: N_("no batch dim"), 1: N_("one batch dim")}.get(n, N_("{n} batch dims")),
        n=n,
    )


def _index(flat: int, shape: Sequence[int]) -> str:
    index = torch.unravel_index(torch.tensor(flat), tuple(shape))
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _error(error: BaseException) -> str:
    """An exception as "ValueError: what it says." (one final full stop)."""
    text = str(error).strip().rstrip(".")
    return f"{type(error).__name__}: {text}." if text else f"{type(error).__name__}."


def _close(got: Any, expected: Any) -> bool:
    """True if ``got`` is a tensor equal to ``expected`` (NaN where it has NaN)."""
    if not isinstance(got, Tensor) or not isinstance(expected, Tensor):
        return False
    if tuple(got.shape) != tuple(expected.shape):
        return False
    got, expected = got.detach().double(), expected.detach().double()
    return torch.allclose(got, expected, rtol=_RTOL, atol=_ATOL, equal_nan=True)


def _difference(what: str, got: Tensor, expected: Tensor, form: str) -> str | None:
    """None if ``got`` equals ``expected``, else what differs, in plain words.

    ``what`` is ``"output"``, ``"weights"``, ``"result"`` or ``"gradient of
    <name>"``."""
    name = what.removeprefix("gradient of ")
    subject = {"output": "output", "weights": "weights", "result": "result"}
    which = subject.get(what, "gradient")
    if tuple(got.shape) != tuple(expected.shape):
        return _say(
            _WRONG_SHAPE[which],
            form=_say(form) if form == "its" else form,
            expected=_shape(expected),
            got=_shape(got),
            name=name,
        )
    if _close(got, expected):
        return None
    got, expected = got.detach().double(), expected.detach().double()
    new_nan = torch.isnan(got) & ~torch.isnan(expected)
    if new_nan.any():
        first = int(new_nan.flatten().nonzero()[0])
        return _say(
            _CONTAINS_NAN[which],
            index=_index(first, got.shape),
            value=format_number(float(expected.flatten()[first]), ".4f"),
            name=name,
        )
    return _say(_WRONG[which], gap=_largest_gap(got, expected), name=name)


def _largest_gap(got: Tensor, expected: Tensor) -> str:
    """Where ``got`` is farthest from ``expected`` (two tensors of one shape)."""
    got, expected = got.detach().double(), expected.detach().double()
    gap = (got - expected).abs().nan_to_num(nan=math.inf)
    worst = int(gap.flatten().argmax())
    return _say(
        "the largest difference is {gap}, at index {index} "
        "(expected {expected}, got {got}).",
        gap=format_number(float(gap.flatten()[worst]), ".4g"),
        index=_index(worst, got.shape),
        expected=format_number(float(expected.flatten()[worst]), ".4f"),
        got=format_number(float(got.flatten()[worst]), ".4f"),
    )


_WRONG_SHAPE = {
    "output": N_(
        "The output has the wrong shape: expected {form} = {expected}, got {got}."
    ),
    "weights": N_(
        "The weights have the wrong shape: expected {form} = {expected}, got {got}."
    ),
    "result": N_(
        "The result has the wrong shape: expected {form} = {expected}, got {got}."
    ),
    "gradient": N_(
        "The gradient of {name} has the wrong shape: expected {form} = "
        "{expected}, got {got}."
    ),
}
_CONTAINS_NAN = {
    "output": N_("The output contains NaN, first at index {index} (expected {value})."),
    "weights": N_(
        "The weights contain NaN, first at index {index} (expected {value})."
    ),
    "result": N_("The result contains NaN, first at index {index} (expected {value})."),
    "gradient": N_(
        "The gradient of {name} contains NaN, first at index {index} "
        "(expected {value})."
    ),
}
_WRONG = {
    "output": N_("The output is wrong: {gap}"),
    "weights": N_("The weights are wrong: {gap}"),
    "result": N_("The result is wrong: {gap}"),
    "gradient": N_("The gradient of {name} is wrong: {gap}"),
}


def _recognise(got: Tensor, mistakes: _Mistakes, which: int | None) -> str | None:
    """The hint of the first typical mistake whose result equals ``got``."""
    for hint, result in mistakes:
        if result is None:
            continue
        if _close(got, result if which is None else result[which]):
            return hint
    return None


def _attempt(make: Callable[[], Any]) -> Any:
    """The result of ``make()``, or None when this mistake cannot run here."""
    try:
        with torch.no_grad():
            return make()
    except (RuntimeError, ValueError, IndexError):
        return None


@dataclass
class _Case:
    """One case of a checker: a name, and how to run it."""

    name: str
    batch_dims: int
    run: Callable[[_Run], None]
    masked: bool = False
    fallback: str | None = None  # the hint when no typical mistake is recognised


class _Run:
    """One run of a checker: which case is running, and how to report a failure."""

    def __init__(self, checker: str, cases: Sequence[_Case], batch_hint: str) -> None:
        self.checker = checker
        self.cases = list(cases)
        self.batch_hint = batch_hint
        self.number = 0
        self.called = ""
        self.empty_rows = False  # does this case mask a whole row?
        self.weights_unchecked: list[str] = []  # cases that returned no weights

    @property
    def case(self) -> _Case:
        return self.cases[self.number - 1]

    def fail(
        self,
        problem: str,
        hint: str | _Say | None = None,
        cause: BaseException | None = None,
    ) -> NoReturn:
        """Raise the ``AssertionError`` that names this case and the problem."""
        passed = [case.batch_dims for case in self.cases[: self.number - 1]]
        if hint is None and passed and self.case.batch_dims not in passed:
            hint = self.batch_hint.format(
                good=_dims(passed[0]), bad=_dims(self.case.batch_dims)
            )
        if hint is None and self.case.fallback:
            hint = _Say(self.case.fallback)
        paragraphs = [
            _say(
                "{checker}: case {number} of {total} failed: {name}.",
                checker=self.checker,
                number=self.number,
                total=len(self.cases),
                name=_say(self.case.name),
            ),
            _say("Called: {called}.", called=self.called),
            problem,
        ]
        if hint:
            paragraphs.append(_say("Hint: {hint}", hint=hint))
        raise AssertionError("\n".join(_wrap(p) for p in paragraphs)) from cause

    def call(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any],
        names: Sequence[str],
        what: str,
        mask_hint: _Say | None = None,
        default_hint: _Say | None = None,
    ) -> Any:
        """Call the student's code; report an exception or an input changed in place.

        ``mask_hint`` is the hint for a mask case whose call fails on its
        arguments; ``default_hint`` for a case without a mask whose call misses
        an argument (a mask with no default)."""
        before = [a.detach().clone() if isinstance(a, Tensor) else a for a in args]
        try:
            result = fn(*args)
        except Exception as error:  # the student's code may raise anything
            hint = None
            if self.case.masked and isinstance(error, TypeError) and mask_hint:
                hint = mask_hint if "argument" in str(error) else None
            missing = "missing 1 required positional argument" in str(error)
            if not self.case.masked and isinstance(error, TypeError) and missing:
                hint = default_hint
            if "view" in str(error) and "contiguous" in str(error):
                hint = _VIEW
            self.fail(
                _say(
                    "{what} raised {error} Its traceback is above this message.",
                    what=_say(what),
                    error=_error(error),
                ),
                hint=hint,
                cause=error,
            )
        for name, arg, copy in zip(names, args, before, strict=True):
            if isinstance(arg, Tensor) and not torch.equal(arg.detach(), copy):
                self.fail(
                    _say(
                        "{what} changed its input {name} in place (with an operation "
                        "such as /=, +=, masked_fill_ or a slice assignment).",
                        what=_say(what),
                        name=name,
                    ),
                    hint=_Say(
                        "Leave the inputs as they are: compute new tensors, as in "
                        "scores = query @ key.transpose(-2, -1)."
                    ),
                )
        return result

    def unpack(self, result: Any, what: str) -> tuple[Tensor, Tensor | None]:
        """Split a result into (output, weights or None); refuse anything else.
        A case that returns no weights is noted: the result says they went
        unchecked."""
        if isinstance(result, Tensor):
            self.weights_unchecked.append(self.case.name)
            return result, None
        if (
            isinstance(result, tuple | list)
            and len(result) == 2
            and isinstance(result[0], Tensor)
            and (result[1] is None or isinstance(result[1], Tensor))
        ):
            if result[1] is None:
                self.weights_unchecked.append(self.case.name)
            return result[0], result[1]
        if isinstance(result, tuple | list):
            got = _say(
                "a {type} of {n} items ({shapes})",
                type=type(result).__name__,
                n=len(result),
                shapes=", ".join(_shape(r) for r in result),
            )
        else:
            got = _say("a {type}", type=type(result).__name__)
        hint = _Say("Did you forget the return statement?") if result is None else None
        self.fail(
            _say(
                "{what} returned {got}. Expected a tensor (the output) or a pair "
                "(output, weights) of tensors.",
                what=_say(what),
                got=got,
            ),
            hint=hint,
        )

    def compare(
        self,
        what: str,
        got: Tensor,
        expected: Tensor,
        form: str,
        mistakes: Callable[[], _Mistakes],
        which: int | None,
        extra_hint: str | _Say | None = None,
    ) -> None:
        """Fail unless ``got`` equals ``expected``; recognise a typical mistake."""
        problem = _difference(what, got, expected, form)
        if problem is None:
            return
        hint = _recognise(got, mistakes(), which)
        if hint is None and torch.isnan(got.detach()).any():
            hint = _MASKED_ROW_NAN if self.empty_rows else _NAN
        self.fail(problem, hint=hint or extra_hint)


#: The longest a case may run, in seconds: every case takes well under a second
#: with a correct function, even on a slow laptop.
CASE_SECONDS = 30.0


class _TooLong(BaseException):
    """Raised in the student's code when a case runs past :data:`CASE_SECONDS`
    (a BaseException: the student's own ``except Exception`` lets it through)."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`_TooLong` in the code running after ``seconds``, where
    the platform allows it (SIGALRM, main thread); otherwise no limit."""
    usable = hasattr(signal, "SIGALRM") and (
        threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def stop(signum, frame):
        raise _TooLong

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_cases(
    checker: str, cases: Sequence[_Case], masks: bool, batch_hint: str
) -> CheckResult:
    """Run the cases in order, inside fork_rng; stop at the first failure."""
    if not isinstance(masks, bool):
        raise ValueError(
            _say("masks must be True or False, got {masks}", masks=repr(masks))
        )
    chosen = [case for case in cases if masks or not case.masked]
    run = _Run(checker, chosen, batch_hint)
    with torch.random.fork_rng(devices=[]):  # the student's RNG state is kept
        for number, case in enumerate(chosen, 1):
            run.number, run.called, run.empty_rows = number, "", False
            try:
                with _time_limit(CASE_SECONDS):
                    case.run(run)
            except _TooLong:
                run.fail(
                    _say(
                        "It ran for more than {seconds} seconds without "
                        "returning, and was stopped.",
                        seconds=format_number(CASE_SECONDS, "g"),
                    ),
                    hint=_Say(
                        "Look for a loop that never ends: a while loop whose "
                        "condition never becomes false, or a counter never "
                        "incremented. A correct function takes well under a second."
                    ),
                )
    skipped = tuple(_say(case.name) for case in cases if case.masked and not masks)
    names = tuple(_say(case.name) for case in chosen)
    unchecked = tuple(_say(name) for name in dict.fromkeys(run.weights_unchecked))
    return CheckResult(checker, names, skipped, unchecked)


# --- typical mistakes, computed on the same inputs ----------------------------


def _attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    *,
    scale: float | None = None,
    dim: int = -1,
    mask_as: str = "book",
) -> tuple[Tensor, Tensor]:
    """Attention as the book computes it, or with one typical mistake.

    ``mask_as`` says how the mask is used: "book" (the reference), "ignored",
    "inverted", "zero" / "-inf" / "large" (the value the blocked scores get),
    "after" (weights multiplied by the mask after the softmax).
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if attn_mask is not None and mask_as == "inverted":
        attn_mask, mask_as = ~attn_mask, "book"
    if attn_mask is None or mask_as == "ignored":
        attn_mask = None
    elif mask_as == "book" and dim == -1:
        return scaled_dot_product_attention(query, key, value, attn_mask, scale=scale)
    scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
    fill = {"book": -math.inf, "-inf": -math.inf, "large": -1e9, "zero": 0.0}
    if attn_mask is not None and mask_as in fill:
        scores = scores.masked_fill(~attn_mask, fill[mask_as])
    weights = torch.softmax(scores, dim=dim)  # (..., L, S)
    if attn_mask is not None and mask_as == "after":
        weights = weights * attn_mask
    if attn_mask is not None and mask_as == "book":
        weights = weights.nan_to_num(0.0)
    return weights @ value, weights  # (..., L, Ev), (..., L, S)


def _attention_mistakes(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None
) -> list[tuple[str, _Attention]]:
    """Typical mistakes inside attention, as functions of (q, k, v, mask)."""
    e = query.shape[-1]
    mistakes: list[tuple[str, _Attention]] = []

    def add(hint: _Say, **changes: Any) -> None:
        mistakes.append((hint, lambda q, k, v, m: _attention(q, k, v, m, **changes)))

    add(_NO_SCALE, scale=1.0)
    add(_BY_DK, scale=1.0 / e)
    add(_TIMES_SQRT, scale=math.sqrt(e))
    sizes = (
        (_Say("Ev, the size of each value"), value.shape[-1]),
        (_Say("S, the number of keys"), key.shape[-2]),
        (_Say("L, the number of queries"), query.shape[-2]),
    )
    seen = {e}
    for what, size in sizes:
        if size not in seen:
            seen.add(size)
            add(_WRONG_SIZE.format(what=what, size=size, e=e), scale=size**-0.5)
    add(_SOFTMAX_DIM, dim=-2)
    mistakes.append((_SWAPPED_QK, lambda q, k, v, m: _attention(k, q, v, m)))
    mistakes.append((_KEY_AS_VALUE, lambda q, k, v, m: _attention(q, k, k, m)))
    if attn_mask is not None:
        add(_MASK_IGNORED, mask_as="ignored")
        add(_MASK_INVERTED, mask_as="inverted")
        add(_MASK_ZERO, mask_as="zero")
        add(_MASK_AFTER, mask_as="after")
        add(_MASKED_ROW_NAN, mask_as="-inf")
        add(_MASKED_ROW_UNIFORM, mask_as="large")
    return mistakes


def _weights_mistakes(query: Tensor, key: Tensor, expected: Tensor) -> _Mistakes:
    """Typical mistakes in the weights returned beside a right output, as
    (hint, (None, weights)) like the results of the other mistakes."""
    scores = query @ key.transpose(-2, -1)  # (..., L, S)
    return [
        (_WEIGHTS_TRANSPOSED, (None, expected.transpose(-2, -1))),
        (_WEIGHTS_ARE_SCORES, (None, scores / math.sqrt(query.shape[-1]))),
        (_WEIGHTS_ARE_SCORES, (None, scores)),
    ]


def _split_no_transpose(x: Tensor, num_heads: int) -> Tensor:
    *batch, length, dim = x.shape
    return x.reshape(*batch, num_heads, length, dim // num_heads)


def _split_strided(x: Tensor, num_heads: int) -> Tensor:
    *batch, length, dim = x.shape
    x = x.reshape(*batch, length, dim // num_heads, num_heads)  # (..., T, E, H)
    return x.movedim(-1, -3)  # (..., H, T, E)


def _split_not_transposed(x: Tensor, num_heads: int) -> Tensor:
    *batch, length, dim = x.shape
    return x.reshape(*batch, length, num_heads, dim // num_heads)  # (..., T, H, E)


def _split_length(x: Tensor, num_heads: int) -> Tensor:
    *batch, length, dim = x.shape
    return x.reshape(*batch, num_heads, length // num_heads, dim)


def _concat_no_transpose(x: Tensor) -> Tensor:
    *batch, num_heads, length, head_dim = x.shape
    return x.reshape(*batch, length, num_heads * head_dim)


def _concat_strided(x: Tensor) -> Tensor:
    *batch, num_heads, length, head_dim = x.shape
    x = x.movedim(-3, -1)  # (..., T, E, H)
    return x.reshape(*batch, length, head_dim * num_heads)


_SPLIT_MISTAKES = (
    (_SPLIT_NO_TRANSPOSE, _split_no_transpose),
    (_SPLIT_STRIDED, _split_strided),
    (_SPLIT_NOT_TRANSPOSED, _split_not_transposed),
    (_SPLIT_LENGTH, _split_length),
)


def _multi_head(
    reference: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    *,
    attention: _Attention = _attention,
    split: Callable[[Tensor, int], Tensor] = split_heads,
    concat: Callable[[Tensor], Tensor] = concat_heads,
    project_out: bool = True,
) -> tuple[Tensor, Tensor]:
    """``reference``'s multi-head attention, or with one typical mistake."""
    heads = reference.num_heads
    q = split(reference.W_q(query), heads)  # (..., H, L, E)
    k = split(reference.W_k(key), heads)  # (..., H, S, E)
    v = split(reference.W_v(value), heads)  # (..., H, S, E)
    context, weights = attention(q, k, v, attn_mask)  # (..., H, L, E), (..., H, L, S)
    output = concat(context)  # (..., L, D)
    return (reference.W_o(output) if project_out else output), weights


def _multi_head_mistakes(
    reference: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None,
) -> _Mistakes:
    """What typical mistakes of a multi-head module give on these inputs."""
    heads, dim = reference.num_heads, reference.embed_dim

    def run(*args: Tensor, **changes: Any) -> Any:
        args = args or (query, key, value)
        return _attempt(lambda: _multi_head(reference, *args, attn_mask, **changes))

    q, k, v = (split_heads(t, heads) for t in (query, key, value))
    found = [
        (hint, run(attention=attention))
        for hint, attention in _attention_mistakes(q, k, v, attn_mask)
    ]

    def by_model_dim(q: Tensor, k: Tensor, v: Tensor, m: Tensor | None) -> Any:
        return _attention(q, k, v, m, scale=1.0 / math.sqrt(dim))

    if heads > 1:
        hint = _SCALE_MODEL_DIM.format(d=dim, e=dim // heads)
        found.append((hint, run(attention=by_model_dim)))
    found += [
        (_SPLIT_NO_TRANSPOSE, run(split=_split_no_transpose)),
        (
            _SPLIT_NO_TRANSPOSE,
            run(split=_split_no_transpose, concat=_concat_no_transpose),
        ),
        (_CONCAT_NO_TRANSPOSE, run(concat=_concat_no_transpose)),
        (_SPLIT_STRIDED, run(split=_split_strided)),
        (_SPLIT_STRIDED, run(split=_split_strided, concat=_concat_strided)),
        (_NO_OUTPUT_PROJECTION, run(project_out=False)),
        (_QUERY_ONLY, run(query, query, query)),
        (_VALUE_FROM_KEY, run(query, key, key)),
    ]
    return found


# --- checking the student's arguments and modules -----------------------------


def _check_function(fn: Any, checker: str, example: str) -> None:
    if isinstance(fn, type) or not callable(fn):
        raise ValueError(
            _say(
                "fn must be your function, as in {checker}({example}); got {fn}",
                checker=checker,
                example=example,
                fn=repr(fn),
            )
        )


def _check_class(cls: Any, checker: str, example: str) -> None:
    if isinstance(cls, nn.Module):
        raise ValueError(
            _say(
                "cls must be your class, not a module built from it: call "
                "{checker}({name}); got an instance of {name}",
                checker=checker,
                name=type(cls).__name__,
            )
        )
    if not isinstance(cls, type):
        raise ValueError(
            _say(
                "cls must be your class, as in {checker}({example}); got {cls}",
                checker=checker,
                example=example,
                cls=repr(cls),
            )
        )


def _build(
    run: _Run,
    cls: type,
    args: tuple[int, ...],
    names: Sequence[str],
    reference: nn.Module,
    generator: torch.Generator,
) -> nn.Module:
    """Build the student's module, and give it and ``reference`` the same weights.

    The projections ``names`` must be ``nn.Linear(D, D)`` attributes; they get
    seeded random weights (and biases, if the student's have one), which are
    copied into ``reference`` (zero bias where the student's layer has none).
    """
    shown = ", ".join(str(a) for a in args)
    run.called = f"{cls.__name__}({shown})"
    try:
        module = cls(*args)
    except Exception as error:  # the student's code may raise anything
        run.fail(
            _say(
                "Creating your module with {call} raised {error} Its traceback "
                "is above this message.",
                call=f"{cls.__name__}({shown})",
                error=_error(error),
            ),
            cause=error,
        )
    if not isinstance(module, nn.Module):
        run.fail(
            _say(
                "{call} gave a {type}, not a torch.nn.Module. Make your class a "
                "subclass of nn.Module.",
                call=f"{cls.__name__}({shown})",
                type=type(module).__name__,
            )
        )
    dim = args[0]
    needed = _say("{first} and {last}", first=", ".join(names[:-1]), last=names[-1])
    for name in names:
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear):
            linears = [
                n for n, m in module.named_children() if isinstance(m, nn.Linear)
            ]
            have = ", ".join(linears) if linears else _say("none")
            run.fail(
                _say(
                    "{checker} gives your module and the reference the same "
                    "weights, so it needs the projections as nn.Linear(embed_dim, "
                    "embed_dim) attributes named {needed}, as in qkv.{reference}. "
                    "Your module has no nn.Linear named {name} (its nn.Linear "
                    "attributes: {have}).",
                    checker=run.checker,
                    needed=needed,
                    reference=type(reference).__name__,
                    name=name,
                    have=have,
                )
            )
        if (layer.in_features, layer.out_features) != (dim, dim):
            run.fail(
                _say(
                    "Your {name} is nn.Linear({inputs}, {outputs}); with "
                    "embed_dim={dim} it must be nn.Linear({dim}, {dim}): every "
                    "projection maps D numbers to D.",
                    name=name,
                    inputs=layer.in_features,
                    outputs=layer.out_features,
                    dim=dim,
                )
            )
    module.eval()  # no dropout while checking
    with torch.no_grad():
        for name in names:
            student, book = getattr(module, name), getattr(reference, name)
            weight = torch.randn(dim, dim, generator=generator) / math.sqrt(dim)
            bias = torch.randn(dim, generator=generator) * 0.5
            student.weight.copy_(weight)
            book.weight.copy_(weight)
            if student.bias is not None:
                student.bias.copy_(bias)
            book.bias.copy_(bias if student.bias is not None else torch.zeros(dim))
    return module


def _extra_parameters(module: nn.Module, names: Sequence[str]) -> str | None:
    """A hint naming the student's parameters that the reference does not have."""
    extra = [
        name for name, _ in module.named_parameters() if name.split(".")[0] not in names
    ]
    if not extra:
        return None
    return _say(
        "Your module has parameters that the reference does not have: "
        "{extra}. The checker sets only {names}; the result must come from "
        "those alone.",
        extra=", ".join(extra),
        names=", ".join(names),
    )


def _check_gradients(
    run: _Run,
    output: Tensor,
    reference_output: Tensor,
    pairs: Sequence[tuple[str, Tensor, Tensor]],
    generator: torch.Generator,
) -> None:
    """Backpropagate the same random projection of both outputs; compare gradients."""
    if not output.requires_grad:
        run.fail(
            _say(
                "No gradient can flow back through the output (its requires_grad "
                "is False), so nothing before it could be trained."
            ),
            hint=_DETACHED,
        )
    direction = torch.randn(reference_output.shape, generator=generator)
    with torch.enable_grad():  # the book's notebooks run with gradients off
        (output * direction).sum().backward()
        (reference_output * direction).sum().backward()
    for name, mine, theirs in pairs:
        if mine.grad is None:
            run.fail(
                _say(
                    "No gradient reached {name}: it does not take part in "
                    "computing the output, or the path from it was cut.",
                    name=name,
                ),
                hint=_DETACHED,
            )
        problem = _difference(f"gradient of {name}", mine.grad, theirs.grad, N_("its"))
        if problem is not None:
            run.fail(problem)


# --- the checkers ----------------------------------------------------------------


class _Cases:
    """The cases of one checker, each with its own seeded generator."""

    def __init__(self) -> None:
        self.cases: list[_Case] = []

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(_SEED + len(self.cases))

    def add(self, case: _Case) -> None:
        self.cases.append(case)


def _random_mask(generator: torch.Generator, *shape: int) -> Tensor:
    """A random bool mask in which every row has a True and a False, so that
    neither the mask nor its inverse leaves a query with nothing to attend to."""
    mask = torch.rand(*shape, generator=generator) > 0.5
    mask[..., 0] = True
    mask[..., -1] = False
    return mask


def _empty_row_mask(generator: torch.Generator, *shape: int) -> Tensor:
    """A random bool mask in which query 2 of batch element 1 sees nothing."""
    mask = _random_mask(generator, *shape)
    mask[1, ..., 2, :] = False
    return mask


def _called(function: str, names: Sequence[str], args: Sequence[Any]) -> str:
    """How the student's code was called, e.g. "fn(query, key) with query (4, 8)"."""
    shown = dict(zip(names, args, strict=True))  # each name once: module(x, x, x)
    shapes = [
        _say("{name} {shape}", name=name, shape=_shape(arg))
        + (" bool" if arg.dtype == torch.bool else "")
        for name, arg in shown.items()
        if isinstance(arg, Tensor)
    ]
    return _say(
        "{function}({names}) with {shapes}",
        function=function,
        names=", ".join(names),
        shapes=", ".join(shapes),
    )


def _gradient_pairs(
    module: nn.Module, reference: nn.Module, names: Sequence[str]
) -> list[tuple[str, Tensor, Tensor]]:
    pairs = []
    for name in names:
        mine, theirs = getattr(module, name), getattr(reference, name)
        pairs.append((f"{name}.weight", mine.weight, theirs.weight))
        if mine.bias is not None:
            pairs.append((f"{name}.bias", mine.bias, theirs.bias))
    return pairs


def check_scaled_dot_product_attention(
    fn: Callable[..., Any], *, masks: bool = True
) -> CheckResult:
    """Check a student's scaled dot-product attention against the book's.

    Used in the exercises of the chapters *scaled-dot-product* (with
    ``masks=False``) and *masking*. The reference is
    :func:`qkv.attention.scaled_dot_product_attention`.

    The checker calls ``fn(query, key, value)``, and in the mask cases
    ``fn(query, key, value, attn_mask)`` with the mask as the fourth positional
    argument (so the parameter may be called ``mask`` or ``attn_mask``). Masks
    are bool, ``True`` = may attend, and broadcast. ``fn`` is never given
    ``is_causal`` or ``scale``: a causal mask comes as a mask. ``fn`` returns the
    output, shape (..., L, Ev), or a pair ``(output, weights)`` with weights of
    shape (..., L, S); the weights are checked too when they are returned.

    Cases, in order: 2-D inputs with L = S; cross-attention, L != S; Ev != E;
    one batch dim; two batch dims (d_k changes from case to case, so a
    hard-coded sqrt(8) fails); gradients reaching query, key and value. With
    ``masks=True`` then: a mask (L, S) shared by the batch; a causal mask; a
    padding mask (B, 1, S); a query whose mask row is all False (zero weights and
    a zero output expected, never NaN).

    Args:
        fn: the student's function.
        masks: whether to run the mask cases (``False`` before the chapter
            *masking*).

    Returns:
        A :class:`CheckResult` listing the cases, all passed.

    Raises:
        AssertionError: naming the first failing case, how ``fn`` was called,
            what was expected and what came back, with a hint for a typical
            mistake (no scaling, softmax over the wrong dim, mask ignored or
            inverted, NaN for a query that may attend to nothing ...).
        ValueError: if ``fn`` is not a function, or ``masks`` not a bool.
    """
    checker = "check_scaled_dot_product_attention"
    _check_function(fn, checker, "my_attention")
    mask_hint = _MASK_ARGUMENT.format(
        what=_Say("function"),
        nth=_Say("fourth"),
        signature="fn(query, key, value, attn_mask=None)",
        checker=checker,
    )
    default_hint = _MASK_DEFAULT.format(
        what=_Say("function"), signature="fn(query, key, value, attn_mask=None)"
    )
    cases = _Cases()

    def case(
        name: str,
        q: tuple[int, ...],
        k: tuple[int, ...],
        v: tuple[int, ...],
        mask: Callable[[torch.Generator], Tensor] | None = None,
        grad: bool = False,
        fallback: str | None = None,
    ) -> None:
        generator = cases.generator()
        query, key, value = (torch.randn(s, generator=generator) for s in (q, k, v))
        attn_mask = None if mask is None else mask(generator)
        names = ["query", "key", "value"] + ([] if mask is None else ["attn_mask"])
        inputs = [query, key, value] + ([] if mask is None else [attn_mask])

        def test(run: _Run) -> None:
            args = [t.clone().requires_grad_() if grad else t for t in inputs[:3]]
            args += inputs[3:]
            run.called = _called("fn", names, args)
            if grad:
                run.called += _say(", with requires_grad=True, then backward()")
            run.empty_rows = attn_mask is not None and bool((~attn_mask.any(-1)).any())
            with torch.enable_grad():
                theirs = [t.clone().requires_grad_() for t in inputs[:3]]
                expected, weights = scaled_dot_product_attention(*theirs, *inputs[3:])
                result = run.call(
                    fn, args, names, N_("Your function"), mask_hint, default_hint
                )
            output, got_weights = run.unpack(result, N_("Your function"))

            def mistakes() -> _Mistakes:
                return [(_WEIGHTS_FIRST, (weights, None))] + [
                    (hint, _attempt(lambda f=f: f(query, key, value, attn_mask)))
                    for hint, f in _attention_mistakes(query, key, value, attn_mask)
                ]

            run.compare("output", output, expected, "(..., L, Ev)", mistakes, 0)
            if got_weights is not None:

                def weight_mistakes() -> _Mistakes:
                    return mistakes() + _weights_mistakes(query, key, weights)

                run.compare(
                    "weights", got_weights, weights, "(..., L, S)", weight_mistakes, 1
                )
            if grad:
                pairs = list(zip(names, args, theirs, strict=False))
                _check_gradients(run, output, expected, pairs, generator)

        cases.add(_Case(name, len(q) - 2, test, mask is not None, fallback))

    case(N_("2-D inputs, 4 queries and 4 keys (L = S)"), (4, 8), (4, 8), (4, 8))
    case(
        N_("cross-attention: 3 queries, 6 keys (L != S)"),
        (3, 6),
        (6, 6),
        (6, 6),
        fallback=N_(
            "Your code passed with 4 queries, 4 keys and d_k = 8 but not with 3 "
            "queries, 6 keys and d_k = 6. Does it use a size typed by hand (such as "
            "sqrt(8)) instead of query.shape[-1], or mix up L and S? The weights are "
            "(..., L, S): one row per query."
        ),
    )
    case(
        N_("values of another size than keys (Ev = 5, E = 4)"),
        (4, 4),
        (6, 4),
        (6, 5),
        fallback=N_(
            "Your code passed while the values had the size of the keys, but "
            "not with Ev = 5 and E = 4. d_k is query.shape[-1], and the output has the "
            "size of the values, (..., L, Ev)."
        ),
    )
    case(N_("one batch dim (B = 2)"), (2, 4, 8), (2, 6, 8), (2, 6, 5))
    case(N_("two batch dims (2, 3)"), (2, 3, 4, 16), (2, 3, 5, 16), (2, 3, 5, 3))
    case(
        N_("gradients reach query, key and value"),
        (2, 4, 6),
        (2, 5, 6),
        (2, 5, 4),
        grad=True,
    )
    shapes = (2, 4, 8), (2, 6, 8), (2, 6, 5)
    case(
        N_("a bool mask (L, S) shared by the batch"),
        *shapes,
        mask=lambda g: _random_mask(g, 4, 6),
    )
    case(
        N_("a causal mask (L, L)"),
        (2, 5, 8),
        (2, 5, 8),
        (2, 5, 5),
        mask=lambda g: causal_mask(5),
    )
    case(
        N_("a padding mask (B, 1, S): 6 and 3 real keys"),
        *shapes,
        mask=lambda g: padding_mask([6, 3])[:, None, :],
    )
    case(
        N_("a query that may attend to nothing (its mask row is all False)"),
        *shapes,
        mask=lambda g: _empty_row_mask(g, 2, 4, 6),
    )
    return _run_cases(checker, cases.cases, masks, _BATCH_DIMS["attention"])


def check_self_attention(cls: type[nn.Module], *, masks: bool = True) -> CheckResult:
    """Check a student's single-head self-attention module against the book's.

    Used in the exercises of the chapters *self-attention* (with ``masks=False``)
    and *masking*. The reference is :class:`qkv.attention.SelfAttention`.

    The checker builds ``cls(embed_dim)`` for two sizes. To give the student's
    module and the reference the same weights, it needs the projections as
    ``nn.Linear(embed_dim, embed_dim)`` attributes named ``W_q``, ``W_k`` and
    ``W_v`` (with or without bias), as in :class:`~qkv.attention.SelfAttention`;
    it sets them to seeded random weights and copies those into the reference.
    It calls ``module(x)``, and ``module(x, attn_mask)`` in the mask cases.
    ``forward`` returns the output, shape (..., T, D), or a pair
    ``(output, weights)`` with weights (..., T, T); the weights are checked too
    when they are returned. The module is put in ``eval()`` mode.

    Cases, in order: a batch (B, T, D); one sequence, no batch dim; two batch
    dims; another embed_dim; gradients reaching W_q, W_k and W_v. With
    ``masks=True`` then: a mask (T, T) shared by the batch; a causal mask; a
    padding mask (B, 1, T); a position whose mask row is all False (zero weights
    and a zero output expected).

    Args:
        cls: the student's class (the class itself, not a module built from it).
        masks: whether to run the mask cases (``False`` before the chapter
            *masking*).

    Returns:
        A :class:`CheckResult` listing the cases, all passed.

    Raises:
        AssertionError: naming the first failing case, what was expected and what
            came back, with a hint for a typical mistake (no scaling, queries and
            keys swapped, values not projected, mask ignored ...).
        ValueError: if ``cls`` is not a class, or ``masks`` not a bool.
    """
    checker = "check_self_attention"
    _check_class(cls, checker, "MySelfAttention")
    names = ("W_q", "W_k", "W_v")
    mask_hint = _MASK_ARGUMENT.format(
        what=_Say("forward"),
        nth=_Say("second"),
        signature="forward(x, attn_mask=None)",
        checker=checker,
    )
    default_hint = _MASK_DEFAULT.format(
        what=_Say("forward"), signature="forward(self, x, attn_mask=None)"
    )
    cases = _Cases()

    def case(
        name: str,
        shape: tuple[int, ...],
        mask: Callable[[torch.Generator], Tensor] | None = None,
        grad: bool = False,
        fallback: str | None = None,
    ) -> None:
        generator = cases.generator()
        x = torch.randn(shape, generator=generator)
        attn_mask = None if mask is None else mask(generator)
        args = [x] + ([] if mask is None else [attn_mask])
        arg_names = ["x"] + ([] if mask is None else ["attn_mask"])
        dim = shape[-1]

        def test(run: _Run) -> None:
            reference = SelfAttention(dim)
            module = _build(run, cls, (dim,), names, reference, generator)
            run.called = f"module = {run.called}; " + _called("module", arg_names, args)
            run.empty_rows = attn_mask is not None and bool((~attn_mask.any(-1)).any())
            with torch.enable_grad():
                expected, weights = reference(*args)
                result = run.call(
                    module, args, arg_names, N_("Your forward"), mask_hint, default_hint
                )
            output, got_weights = run.unpack(result, N_("Your forward"))

            def mistakes() -> _Mistakes:
                with torch.no_grad():
                    q, k, v = (getattr(reference, n)(x) for n in names)
                    plain = [x @ getattr(module, n).weight for n in names]
                found = [(_WEIGHTS_FIRST, (weights, None))] + [
                    (hint, _attempt(lambda f=f: f(q, k, v, attn_mask)))
                    for hint, f in _attention_mistakes(q, k, v, attn_mask)
                ]
                return found + [
                    (_RAW_VALUE, _attempt(lambda: _attention(q, k, x, attn_mask))),
                    (_RAW_QUERY_KEY, _attempt(lambda: _attention(x, x, v, attn_mask))),
                    (
                        _WEIGHT_NOT_TRANSPOSED,
                        _attempt(lambda: _attention(*plain, attn_mask)),
                    ),
                ]

            extra = _extra_parameters(module, names)
            run.compare("output", output, expected, "(..., T, D)", mistakes, 0, extra)
            if got_weights is not None:
                run.compare(
                    "weights",
                    got_weights,
                    weights,
                    "(..., T, T)",
                    lambda: mistakes() + _weights_mistakes(x, x, weights)[:1],
                    1,
                    extra,
                )
            if grad:
                pairs = _gradient_pairs(module, reference, names)
                _check_gradients(run, output, expected, pairs, generator)

        cases.add(_Case(name, len(shape) - 2, test, mask is not None, fallback))

    case(N_("a batch of 2 sequences of 5 vectors, (B, T, D) = (2, 5, 8)"), (2, 5, 8))
    case(N_("one sequence, no batch dim, (T, D) = (5, 8)"), (5, 8))
    case(N_("two batch dims, (2, 3, T, D) = (2, 3, 4, 8)"), (2, 3, 4, 8))
    case(
        N_("another size: embed_dim = 6"),
        (2, 5, 6),
        fallback=N_(
            "Your code passed with embed_dim = 8 but not with 6. Does it use a "
            "size typed by hand instead of embed_dim or x.shape[-1]?"
        ),
    )
    case(N_("gradients reach W_q, W_k and W_v"), (2, 5, 8), grad=True)
    case(
        N_("a bool mask (T, T) shared by the batch"),
        (2, 5, 8),
        mask=lambda g: _random_mask(g, 5, 5),
    )
    case(N_("a causal mask (T, T)"), (2, 5, 8), mask=lambda g: causal_mask(5))
    case(
        N_("a padding mask (B, 1, T): 5 and 3 real positions"),
        (2, 5, 8),
        mask=lambda g: padding_mask([5, 3])[:, None, :],
    )
    case(
        N_("a position that may attend to nothing (its mask row is all False)"),
        (2, 5, 8),
        mask=lambda g: _empty_row_mask(g, 2, 5, 5),
    )
    return _run_cases(checker, cases.cases, masks, _BATCH_DIMS["attention"])


def check_split_heads(fn: Callable[[Tensor, int], Tensor]) -> CheckResult:
    """Check a student's ``split_heads(x, num_heads)`` against the book's.

    Used in the exercises of the chapter *multi-head*. The reference is
    :func:`qkv.attention.split_heads`: (..., T, D) -> (..., H, T, E) with
    E = D / H, where head h holds the features h*E:(h+1)*E of every position.

    The checker calls ``fn(x, num_heads)`` and expects a tensor. Cases, in order:
    a batch (B, T, D) into 3 heads; no batch dim; two batch dims; one head; one
    feature per head (H = D). The result may be a view of ``x`` or a copy.

    Args:
        fn: the student's function.

    Returns:
        A :class:`CheckResult` listing the cases, all passed.

    Raises:
        AssertionError: naming the first failing case and the first wrong head,
            with a hint for a typical mistake (reshape straight to (..., H, T, E)
            without the transpose, every H-th feature, T split instead of D ...).
        ValueError: if ``fn`` is not a function.
    """
    checker = "check_split_heads"
    _check_function(fn, checker, "my_split_heads")
    cases = _Cases()

    def case(name: str, shape: tuple[int, ...], heads: int) -> None:
        x = torch.randn(shape, generator=cases.generator())

        def test(run: _Run) -> None:
            run.called = _called("fn", ["x", str(heads)], [x, heads])
            expected = split_heads(x, heads)  # (..., H, T, E)
            result = run.call(fn, [x, heads], ["x", "num_heads"], N_("Your function"))
            if not isinstance(result, Tensor):
                run.unpack(result, N_("Your function"))  # says what came back
                run.fail(
                    _say(
                        "Your function returned a pair ({first}, {second}). "
                        "Expected one tensor, shape (..., H, T, E).",
                        first=_shape(result[0]),
                        second=_shape(result[1]),
                    )
                )
            problem = _difference("result", result, expected, "(..., H, T, D / H)")
            if problem is None:
                return
            head_dim = shape[-1] // heads
            if tuple(result.shape) == tuple(expected.shape):
                for h in range(heads):
                    if not _close(result[..., h, :, :], expected[..., h, :, :]):
                        break
                start, stop = h * head_dim, (h + 1) * head_dim
                problem = _say(
                    "Head {h} is wrong: it should hold x[..., :, {start}:{stop}], "
                    "the features {start} to {last} of every position. Over the "
                    "whole result, {gap}",
                    h=h,
                    start=start,
                    stop=stop,
                    last=stop - 1,
                    gap=_largest_gap(result, expected),
                )
            mistakes = [
                (hint, _attempt(lambda f=f: f(x, heads))) for hint, f in _SPLIT_MISTAKES
            ]
            run.fail(problem, hint=_recognise(result, mistakes, None))

        cases.add(_Case(name, len(shape) - 2, test))

    case(N_("a batch (B, T, D) = (2, 6, 12) cut into 3 heads"), (2, 6, 12), 3)
    case(N_("no batch dim: (T, D) = (6, 12), 3 heads"), (6, 12), 3)
    case(N_("two batch dims: (2, 3, 6, 12), 4 heads"), (2, 3, 6, 12), 4)
    case(N_("one head: (2, 6, 12), 1 head"), (2, 6, 12), 1)
    case(N_("one feature per head: (2, 5, 6), 6 heads"), (2, 5, 6), 6)
    return _run_cases(checker, cases.cases, True, _BATCH_DIMS["split"])


def check_multi_head_attention(
    cls: type[nn.Module], *, masks: bool = True
) -> CheckResult:
    """Check a student's multi-head attention module against the book's.

    Used in the exercises of the chapters *multi-head* (with ``masks=False``)
    and *masking*. The reference is :class:`qkv.attention.MultiHeadAttention`,
    which equals ``torch.nn.MultiheadAttention`` with the same weights
    (``tests/qkv/test_attention.py``).

    The checker builds ``cls(embed_dim, num_heads)`` for two sizes. To give the
    student's module and the reference the same weights, it needs the four
    projections as ``nn.Linear(embed_dim, embed_dim)`` attributes named ``W_q``,
    ``W_k``, ``W_v`` and ``W_o`` (with or without bias), as in
    :class:`~qkv.attention.MultiHeadAttention`; it sets them to seeded random
    weights and copies those into the reference. It calls
    ``module(query, key, value)`` (``module(x, x, x)`` for self-attention), and
    ``module(query, key, value, attn_mask)`` in the mask cases; masks broadcast
    to (..., H, L, S). ``forward`` returns the output, shape (..., L, D), or a
    pair ``(output, weights)`` with weights ``None`` or one map per head,
    (..., H, L, S); the weights are checked when they are a tensor. The module is
    put in ``eval()`` mode.

    Cases, in order: self-attention on a batch; no batch dim; two batch dims;
    cross-attention, L != S; key and value different tensors; another
    embed_dim and num_heads; gradients reaching W_q, W_k, W_v and W_o. With
    ``masks=True`` then: a mask (L, S) shared by batch and heads; a causal mask;
    a padding mask (B, 1, 1, S); a query whose mask row is all False.

    Args:
        cls: the student's class (the class itself, not a module built from it).
        masks: whether to run the mask cases (``False`` before the chapter
            *masking*).

    Returns:
        A :class:`CheckResult` listing the cases, all passed.

    Raises:
        AssertionError: naming the first failing case, what was expected and what
            came back, with a hint for a typical mistake (heads split or
            concatenated the wrong way, scaling by sqrt(D) instead of sqrt(E),
            no W_o, key and value arguments ignored ...).
        ValueError: if ``cls`` is not a class, or ``masks`` not a bool.
    """
    checker = "check_multi_head_attention"
    _check_class(cls, checker, "MyMultiHeadAttention")
    names = ("W_q", "W_k", "W_v", "W_o")
    mask_hint = _MASK_ARGUMENT.format(
        what=_Say("forward"),
        nth=_Say("fourth"),
        signature="forward(query, key, value, attn_mask=None)",
        checker=checker,
    )
    default_hint = _MASK_DEFAULT.format(
        what=_Say("forward"),
        signature="forward(self, query, key, value, attn_mask=None)",
    )
    cases = _Cases()

    def case(
        name: str,
        heads: int,
        q: tuple[int, ...],
        kv_length: int | None = None,
        distinct_value: bool = False,
        mask: Callable[[torch.Generator], Tensor] | None = None,
        grad: bool = False,
        fallback: str | None = None,
    ) -> None:
        generator = cases.generator()
        dim = q[-1]
        query = torch.randn(q, generator=generator)
        if kv_length is None:  # self-attention: module(x, x, x)
            key = value = query
            arg_names = ["x", "x", "x"]
        else:
            kv = (*q[:-2], kv_length, dim)
            key = torch.randn(kv, generator=generator)
            value = torch.randn(kv, generator=generator) if distinct_value else key
            arg_names = ["query", "key", "value" if distinct_value else "key"]
        attn_mask = None if mask is None else mask(generator)
        args = [query, key, value] + ([] if mask is None else [attn_mask])
        arg_names += [] if mask is None else ["attn_mask"]

        def test(run: _Run) -> None:
            reference = MultiHeadAttention(dim, heads)
            module = _build(run, cls, (dim, heads), names, reference, generator)
            run.called = f"module = {run.called}; " + _called("module", arg_names, args)
            run.empty_rows = attn_mask is not None and bool((~attn_mask.any(-1)).any())
            with torch.enable_grad():
                expected, weights = reference(*args)
                result = run.call(
                    module, args, arg_names, N_("Your forward"), mask_hint, default_hint
                )
            output, got_weights = run.unpack(result, N_("Your forward"))

            def mistakes() -> _Mistakes:
                with torch.no_grad():
                    found = _multi_head_mistakes(
                        reference, query, key, value, attn_mask
                    )
                return [(_WEIGHTS_FIRST, (weights, None)), *found]

            extra = _extra_parameters(module, names)
            run.compare("output", output, expected, "(..., L, D)", mistakes, 0, extra)
            if got_weights is not None:
                averaged = weights.detach().mean(-3)
                run.compare(
                    "weights",
                    got_weights,
                    weights,
                    "(..., H, L, S)",
                    lambda: mistakes() + [(_WEIGHTS_AVERAGED, (None, averaged))],
                    1,
                    extra,
                )
            if grad:
                pairs = _gradient_pairs(module, reference, names)
                _check_gradients(run, output, expected, pairs, generator)

        cases.add(_Case(name, len(q) - 2, test, mask is not None, fallback))

    case(
        N_("self-attention on a batch, (B, T, D) = (2, 5, 12), 3 heads"), 3, (2, 5, 12)
    )
    case(N_("no batch dim, (T, D) = (5, 12), 3 heads"), 3, (5, 12))
    case(N_("two batch dims, (2, 3, T, D) = (2, 3, 4, 12), 3 heads"), 3, (2, 3, 4, 12))
    case(
        N_("cross-attention: 4 queries, 6 keys and values (L != S)"),
        3,
        (2, 4, 12),
        6,
        fallback=N_(
            "Your code passed for self-attention but not with 4 queries and 6 "
            "keys. Are the keys and values projected from the key and value arguments, "
            "and are the scores (..., H, L, S), one row per query?"
        ),
    )
    case(N_("key and value are different tensors"), 3, (2, 4, 12), 6, True)
    case(
        N_("another size: embed_dim = 8, num_heads = 4"),
        4,
        (2, 5, 8),
        fallback=N_(
            "Your code passed with embed_dim = 12 and num_heads = 3 but not "
            "with 8 and 4. Does it use a number typed by hand instead of embed_dim, "
            "num_heads or the head size embed_dim // num_heads?"
        ),
    )
    case(N_("gradients reach W_q, W_k, W_v and W_o"), 3, (2, 4, 12), 6, True, grad=True)
    case(
        N_("a bool mask (L, S) shared by the batch and the heads"),
        3,
        (2, 4, 12),
        6,
        True,
        mask=lambda g: _random_mask(g, 4, 6),
    )
    case(N_("a causal mask (T, T)"), 3, (2, 5, 12), mask=lambda g: causal_mask(5))
    case(
        N_("a padding mask (B, 1, 1, S): 6 and 3 real keys"),
        3,
        (2, 4, 12),
        6,
        True,
        mask=lambda g: padding_mask([6, 3])[:, None, None, :],
    )
    case(
        N_("a query that may attend to nothing (its mask row is all False)"),
        3,
        (2, 4, 12),
        6,
        True,
        mask=lambda g: _empty_row_mask(g, 2, 1, 4, 6),
    )
    return _run_cases(checker, cases.cases, masks, _BATCH_DIMS["heads"])


# --- the messages in French ---------------------------------------------------
