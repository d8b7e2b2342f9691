"""Tests of qkv.check: the book's code passes, each typical mistake is named.

The "students" below are written the way a student writes attention (math.sqrt,
F.softmax, masked_fill), each with one typical mistake. For each one the test
asserts which case fails and which hint the message gives.
"""

from __future__ import annotations

import math
import signal
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import qkv
from qkv.check import (
    CheckResult,
    check_multi_head_attention,
    check_scaled_dot_product_attention,
    check_self_attention,
    check_split_heads,
)

CHECKERS = {
    "sdpa": (check_scaled_dot_product_attention, qkv.scaled_dot_product_attention),
    "self": (check_self_attention, qkv.SelfAttention),
    "split": (check_split_heads, qkv.split_heads),
    "multi": (check_multi_head_attention, qkv.MultiHeadAttention),
}


def failure(check, student, **options) -> AssertionError:
    """The AssertionError that ``check`` raises on ``student`` (fails if none)."""
    with pytest.raises(AssertionError) as caught:
        check(student, **options)
    return caught.value


def assert_names(error: AssertionError, checker: str, case: str, hint: str | None):
    """The message names the checker, the failing case and the hint."""
    message = " ".join(str(error).split())  # undo the line wrapping
    first_line = str(error).splitlines()[0]
    assert first_line.startswith(f"{checker}: case {case} of "), message
    if hint is None:
        assert "Hint:" not in message, message
    else:
        assert "Hint:" in message, message
        assert hint in message.split("Hint:", 1)[1], message
    assert all(len(line) <= 88 for line in str(error).splitlines()), message


# --- students' scaled dot-product attention ------------------------------------


def student_attention(
    query,
    key,
    value,
    mask=None,
    *,
    divide_by="sqrt",
    dim=-1,
    fill=float("-inf"),
    use_mask="book",
    nan_to_zero=True,
    mix="value",
):
    """A student's attention; each keyword can switch on one typical mistake."""
    d_k = query.shape[-1]
    scores = query @ key.transpose(-2, -1)
    divisor = {
        "sqrt": math.sqrt(d_k),
        "nothing": 1.0,
        "d_k": d_k,
        "value size": math.sqrt(value.shape[-1]),
        "8": math.sqrt(8),
    }[divide_by]
    scores = scores / divisor
    if mask is not None and use_mask in ("book", "inverted"):
        blocked = mask if use_mask == "inverted" else ~mask
        scores = scores.masked_fill(blocked, fill)
    weights = F.softmax(scores, dim=dim)
    if mask is not None and use_mask == "after":
        weights = weights * mask
    if nan_to_zero:
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights @ (value if mix == "value" else key), weights


def attention_key_dot_t(query, key, value, mask=None):
    weights = F.softmax(query @ key.T / math.sqrt(query.shape[-1]), dim=-1)
    return weights @ value


def attention_swapped(query, key, value, mask=None):
    weights = F.softmax(key @ query.transpose(-2, -1) / math.sqrt(8), dim=-1)
    return weights @ value


def attention_weights_transposed(query, key, value, mask=None):
    output, weights = qkv.scaled_dot_product_attention(query, key, value, mask)
    return output, weights.transpose(-2, -1)


def attention_returns_scores(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    return F.softmax(scores, dim=-1) @ value, scores


def attention_in_place(query, key, value, mask=None):
    query /= math.sqrt(query.shape[-1])  # changes the caller's tensor
    return F.softmax(query @ key.transpose(-2, -1), dim=-1) @ value


def attention_detached(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    weights = F.softmax(scores, dim=-1).detach()
    return weights @ value


def attention_forgets_return(query, key, value, mask=None):
    qkv.scaled_dot_product_attention(query, key, value, mask)


def attention_three_things(query, key, value, mask=None):
    output, weights = qkv.scaled_dot_product_attention(query, key, value, mask)
    return output, weights, query @ key.transpose(-2, -1)


def attention_not_written(query, key, value, mask=None):
    raise NotImplementedError("write the attention here")


def attention_without_mask(query, key, value):
    return student_attention(query, key, value)


SDPA_MISTAKES = {
    "no scaling": (
        partial(student_attention, divide_by="nothing"),
        "1",
        "Did you divide the scores by sqrt(d_k)?",
    ),
    "divided by d_k": (
        partial(student_attention, divide_by="d_k"),
        "1",
        "Divide by sqrt(d_k) (math.sqrt(d_k)), not by d_k.",
    ),
    "sqrt of the value size": (
        partial(student_attention, divide_by="value size"),
        "3",
        "the square root of Ev, the size of each value (5)",
    ),
    "hard-coded sqrt(8)": (
        partial(student_attention, divide_by="8"),
        "2",
        "Does it use a size typed by hand (such as sqrt(8))",
    ),
    "softmax over dim -2": (
        partial(student_attention, dim=-2),
        "1",
        "softmax over the wrong dimension",
    ),
    "softmax over dim 1 (right for 2-D only)": (
        partial(student_attention, dim=1),
        "4",
        "softmax over the wrong dimension",
    ),
    "weights @ key": (
        partial(student_attention, mix="key"),
        "1",
        "The output mixes the values: weights @ value.",
    ),
    "key.T": (
        attention_key_dot_t,
        "4",
        "passed with no batch dim but fails with one batch dim",
    ),
    "query and key swapped": (attention_swapped, "1", "queries and keys swapped"),
    "weights transposed": (
        attention_weights_transposed,
        "1",
        "Your weights are transposed",
    ),
    "scores returned as weights": (
        attention_returns_scores,
        "1",
        "Your weights match the scores before the softmax",
    ),
    "input changed in place": (
        attention_in_place,
        "1",
        "Leave the inputs as they are",
    ),
    "gradient cut by detach": (attention_detached, "6", "Did you use .detach()"),
    "mask ignored": (
        partial(student_attention, use_mask="ignored"),
        "7",
        "the mask was ignored",
    ),
    "mask inverted": (
        partial(student_attention, use_mask="inverted"),
        "7",
        "True means 'may attend'",
    ),
    "masked scores set to 0": (
        partial(student_attention, fill=0.0),
        "7",
        "set the masked scores to float('-inf')",
    ),
    "mask applied after the softmax": (
        partial(student_attention, use_mask="after"),
        "7",
        "the rows no longer sum to 1",
    ),
    "NaN for a query that sees nothing": (
        partial(student_attention, nan_to_zero=False),
        "10",
        "A query whose mask row is all False got NaN",
    ),
    "-1e9 for blocked scores": (
        partial(student_attention, fill=-1e9),
        "10",
        "got equal weights on every key",
    ),
    "no mask argument": (
        attention_without_mask,
        "7",
        "run check_scaled_dot_product_attention(..., masks=False)",
    ),
}


@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")  # key.T
@pytest.mark.parametrize(
    ("student", "case", "hint"), SDPA_MISTAKES.values(), ids=SDPA_MISTAKES.keys()
)
def test_attention_mistake_is_named(student, case, hint):
    error = failure(check_scaled_dot_product_attention, student)
    assert_names(error, "check_scaled_dot_product_attention", case, hint)


@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")  # key.T
@pytest.mark.parametrize(
    ("student", "said"),
    [
        (attention_key_dot_t, "passe sans dimension de lot mais échoue avec une"),
        (partial(student_attention, dim=-2), "une softmax sur la mauvaise dimension"),
    ],
)
def test_french_hints_are_grammatical_and_say_la_softmax(student, said):
    """« passe sans dimension de lot », never « passait avec aucune »; « la
    softmax », as the book says it (review french-edition-2, fixes 1 and 2)."""
    try:
        qkv.set_language("fr")
        error = failure(check_scaled_dot_product_attention, student)
    finally:
        qkv.set_language("en")
    message = " ".join(str(error).split())
    assert said in message, message
    assert "avec aucune" not in message and "un softmax" not in message


def test_attention_message_says_what_came_back():
    error = failure(
        check_scaled_dot_product_attention, partial(student_attention, divide_by="8")
    )
    message = " ".join(str(error).split())
    assert "case 2 of 10 failed: cross-attention: 3 queries, 6 keys (L != S)" in message
    assert "Called: fn(query, key, value) with query (3, 6), key (6, 6)" in message
    assert "The output is wrong: the largest difference is" in message
    assert "at index [" in message


def test_attention_wrong_shape_is_reported():
    error = failure(
        check_scaled_dot_product_attention, partial(student_attention, mix="key")
    )
    assert "case 1 of" in str(error)  # same shape (E = Ev): named by its hint
    error = failure(
        check_scaled_dot_product_attention,
        lambda q, k, v, m=None: qkv.scaled_dot_product_attention(q, k, v, m)[0][0],
    )
    message = " ".join(str(error).split())
    assert "The output has the wrong shape: expected (..., L, Ev) = (4, 8)" in message
    assert "got (8,)" in message


def attention_not_started(query, key, value, mask=None):
    raise NotImplementedError


@pytest.mark.parametrize(
    ("student", "said"),
    [
        (
            attention_not_written,
            "raised NotImplementedError: write the attention here. Its traceback",
        ),
        (attention_not_started, "raised NotImplementedError. Its traceback"),
    ],
    ids=["with a message", "without a message"],
)
def test_student_exception_is_reported_and_chained(student, said):
    error = failure(check_scaled_dot_product_attention, student)
    message = " ".join(str(error).split())
    assert "case 1 of 10 failed: 2-D inputs" in message
    assert f"Your function {said} is above this message." in message
    assert isinstance(error.__cause__, NotImplementedError)


def attention_never_returns(query, key, value, mask=None):
    steps = 0
    while steps < 1:  # the student forgot to increment steps
        try:
            pass
        except Exception:  # not even this swallows the checker's stop
            pass
    return query


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="no SIGALRM (Windows)")
def test_a_function_that_never_returns_is_stopped_and_named(monkeypatch):
    monkeypatch.setattr(qkv.check, "CASE_SECONDS", 0.2)
    error = failure(check_scaled_dot_product_attention, attention_never_returns)
    message = " ".join(str(error).split())
    assert "case 1 of 10 failed: 2-D inputs" in message
    assert "more than 0.2 seconds without returning" in message
    assert "a loop that never ends" in message
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left


@pytest.mark.parametrize(
    ("student", "got"),
    [
        (attention_forgets_return, "returned a NoneType"),
        (attention_three_things, "returned a tuple of 3 items"),
        (lambda q, k, v, m=None: q.numpy(), "returned a ndarray"),
    ],
    ids=["None", "three items", "NumPy array"],
)
def test_wrong_return_type_is_reported(student, got):
    error = failure(check_scaled_dot_product_attention, student)
    message = " ".join(str(error).split())
    assert got in message
    assert "Expected a tensor (the output) or a pair (output, weights)" in message


def test_masks_false_skips_the_mask_cases():
    result = check_scaled_dot_product_attention(attention_without_mask, masks=False)
    assert len(result.cases) == 6
    assert len(result.skipped) == 4
    assert all("mask" in name or "attend" in name for name in result.skipped)
    assert "Not run (masks=False): 4 mask cases." in repr(result)


# --- students' self-attention ----------------------------------------------------


class StudentSelfAttention(nn.Module):
    """A student's self-attention; class attributes switch on one mistake."""

    divide_by = "sqrt"
    swap = False
    project_value = True
    call_layers = True
    bias = True

    def __init__(self, embed_dim):
        super().__init__()
        self.W_q = nn.Linear(embed_dim, embed_dim, bias=self.bias)
        self.W_k = nn.Linear(embed_dim, embed_dim, bias=self.bias)
        self.W_v = nn.Linear(embed_dim, embed_dim, bias=self.bias)

    def forward(self, x, mask=None):
        if self.call_layers:
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        else:
            Q, K, V = (x @ w.weight for w in (self.W_q, self.W_k, self.W_v))
        if self.swap:
            Q, K = K, Q
        if not self.project_value:
            V = x
        d_k = Q.shape[-1]
        scores = Q @ K.transpose(-2, -1)
        if self.divide_by == "sqrt":
            scores = scores / math.sqrt(d_k)
        if self.divide_by == "8":
            scores = scores / math.sqrt(8)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        return weights @ V


def student_class(base, **attributes):
    return type(base.__name__, (base,), attributes)


class WithOutputProjection(StudentSelfAttention):
    def __init__(self, embed_dim):
        super().__init__(embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)

    def forward(self, x, mask=None):
        return self.W_o(super().forward(x, mask))


class OtherNames(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)


class BatchOnly(StudentSelfAttention):
    def forward(self, x, mask=None):
        B, T, D = x.shape  # works only with exactly one batch dim
        return super().forward(x, mask)


class NoMask(StudentSelfAttention):
    def forward(self, x):
        return super().forward(x)


class InvertedMask(StudentSelfAttention):
    def forward(self, x, mask=None):
        return super().forward(x, None if mask is None else ~mask)


class Detached(StudentSelfAttention):
    def forward(self, x, mask=None):
        weights = torch.softmax(
            self.W_q(x) @ self.W_k(x).transpose(-2, -1) / math.sqrt(x.shape[-1]), -1
        )
        return weights @ self.W_v(x).detach()


class BrokenInit(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.W_q = nn.Linear(embed_dim)  # forgot the output size


SELF_MISTAKES = {
    "no scaling": (
        student_class(StudentSelfAttention, divide_by="nothing"),
        "1",
        "Did you divide the scores by sqrt(d_k)?",
    ),
    "W_q and W_k swapped": (
        student_class(StudentSelfAttention, swap=True),
        "1",
        "queries and keys swapped",
    ),
    "values not projected": (
        student_class(StudentSelfAttention, project_value=False),
        "1",
        "value = self.W_v(x)",
    ),
    "hard-coded sqrt(8)": (
        student_class(StudentSelfAttention, divide_by="8"),
        "4",
        "Does it use a size typed by hand instead of embed_dim or x.shape[-1]?",
    ),
    "x @ W.weight": (
        student_class(StudentSelfAttention, call_layers=False, bias=False),
        "1",
        "call the layer, as in self.W_q(x)",
    ),
    "an extra W_o": (
        WithOutputProjection,
        "1",
        "parameters that the reference does not have: W_o.weight, W_o.bias",
    ),
    "projections named otherwise": (
        OtherNames,
        "1",
        None,
    ),
    "B, T, D = x.shape": (
        BatchOnly,
        "2",
        "passed with one batch dim but fails with no batch dim",
    ),
    "gradient cut by detach": (Detached, "5", "Did you use .detach()"),
    "no mask argument": (
        NoMask,
        "6",
        "run check_self_attention(..., masks=False)",
    ),
    "mask inverted": (InvertedMask, "6", "True means 'may attend'"),
}


@pytest.mark.parametrize(
    ("student", "case", "hint"), SELF_MISTAKES.values(), ids=SELF_MISTAKES.keys()
)
def test_self_attention_mistake_is_named(student, case, hint):
    error = failure(check_self_attention, student)
    assert_names(error, "check_self_attention", case, hint)


def test_self_attention_asks_for_the_projection_names():
    message = " ".join(str(failure(check_self_attention, OtherNames)).split())
    assert "attributes named W_q, W_k and W_v, as in qkv.SelfAttention" in message
    assert "no nn.Linear named W_q (its nn.Linear attributes: query, key, value)" in (
        message
    )


def test_self_attention_reports_a_failing_constructor():
    error = failure(check_self_attention, BrokenInit)
    message = " ".join(str(error).split())
    assert "Creating your module with BrokenInit(8) raised TypeError" in message
    assert isinstance(error.__cause__, TypeError)


# --- students' split_heads -------------------------------------------------------


def split_no_transpose(x, num_heads):
    *batch, T, D = x.shape
    return x.reshape(*batch, num_heads, T, D // num_heads)


def split_strided(x, num_heads):
    *batch, T, D = x.shape
    return x.reshape(*batch, T, D // num_heads, num_heads).movedim(-1, -3)


def split_forgot_transpose(x, num_heads):
    *batch, T, D = x.shape
    return x.reshape(*batch, T, num_heads, D // num_heads)


def split_length(x, num_heads):
    *batch, T, D = x.shape
    return x.reshape(*batch, num_heads, T // num_heads, D)


def split_three_dims_only(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def split_positive_dims(x, num_heads):
    *batch, T, D = x.shape
    return x.reshape(*batch, T, num_heads, D // num_heads).transpose(1, 2)


SPLIT_MISTAKES = {
    "reshape to (..., H, T, E) directly": (
        split_no_transpose,
        "1",
        "straight to (..., H, T, E)",
    ),
    "every H-th feature": (split_strided, "1", "take every H-th feature"),
    "transpose forgotten": (split_forgot_transpose, "1", "the transpose is missing"),
    "T split instead of D": (split_length, "1", "the sequence (T) cut into H pieces"),
    "B, T, D = x.shape": (
        split_three_dims_only,
        "2",
        "unpack the shape as *batch, T, D = x.shape",
    ),
    "transpose(1, 2)": (
        split_positive_dims,
        "2",
        "passed with one batch dim but fails with no batch dim",
    ),
}


@pytest.mark.parametrize(
    ("student", "case", "hint"), SPLIT_MISTAKES.values(), ids=SPLIT_MISTAKES.keys()
)
def test_split_heads_mistake_is_named(student, case, hint):
    error = failure(check_split_heads, student)
    assert_names(error, "check_split_heads", case, hint)


def test_split_heads_names_the_wrong_head():
    message = " ".join(str(failure(check_split_heads, split_strided)).split())
    assert "Head 0 is wrong: it should hold x[..., :, 0:4]" in message
    assert "the features 0 to 3 of every position" in message
    message = " ".join(str(failure(check_split_heads, split_forgot_transpose)).split())
    expected = "expected (..., H, T, D / H) = (2, 3, 6, 4), got (2, 6, 3, 4)"
    assert expected in message


# --- students' multi-head attention ----------------------------------------------


class StudentMultiHead(nn.Module):
    """A student's multi-head attention; class attributes switch on one mistake."""

    split_as = "book"
    concat_as = "book"
    scale_by = "head"
    use_output = True
    inputs = "all"
    weights_as = "per head"
    nan_to_zero = True

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, embed_dim)
        self.W_k = nn.Linear(embed_dim, embed_dim)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)

    def split(self, x):
        *batch, T, D = x.shape
        H, E = self.num_heads, self.head_dim
        if self.split_as == "no transpose":
            return x.reshape(*batch, H, T, E)
        if self.split_as == "strided":
            return x.reshape(*batch, T, E, H).movedim(-1, -3)
        return x.reshape(*batch, T, H, E).transpose(-3, -2)

    def concat(self, x):
        *batch, H, T, E = x.shape
        if self.concat_as == "no transpose":
            return x.reshape(*batch, T, H * E)
        if self.concat_as == "view":
            return x.transpose(-3, -2).view(*batch, T, H * E)
        return x.transpose(-3, -2).reshape(*batch, T, H * E)

    def forward(self, query, key, value, mask=None):
        if self.inputs == "query only":
            key = value = query
        if self.inputs == "value from key":
            value = key
        Q, K, V = self.split(self.W_q(query)), self.split(self.W_k(key)), None
        V = self.split(self.W_v(value))
        d_k = self.head_dim if self.scale_by == "head" else Q.shape[-3] * Q.shape[-1]
        scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if self.nan_to_zero:
            weights = weights.nan_to_num(0.0)
        output = self.concat(weights @ V)
        if self.use_output:
            output = self.W_o(output)
        if self.weights_as == "averaged":
            return output, weights.mean(dim=-3)
        return output, weights


class FusedProjection(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out = nn.Linear(embed_dim, embed_dim)


class OneArgument(StudentMultiHead):
    def __init__(self, embed_dim):
        super().__init__(embed_dim, 4)


class HardCodedHeads(StudentMultiHead):
    def __init__(self, embed_dim, num_heads):
        super().__init__(embed_dim, 3)


MULTI_MISTAKES = {
    "split and concat without transpose": (
        student_class(
            StudentMultiHead, split_as="no transpose", concat_as="no transpose"
        ),
        "1",
        "straight to (..., H, T, E)",
    ),
    "split without transpose": (
        student_class(StudentMultiHead, split_as="no transpose"),
        "1",
        "straight to (..., H, T, E)",
    ),
    "strided heads": (
        student_class(StudentMultiHead, split_as="strided"),
        "1",
        "take every H-th feature",
    ),
    "concat without transpose": (
        student_class(StudentMultiHead, concat_as="no transpose"),
        "1",
        "(..., H, T, E) straight to (..., T, D)",
    ),
    "view after transpose": (
        student_class(StudentMultiHead, concat_as="view"),
        "1",
        "Use .reshape()",
    ),
    "scaled by sqrt(D)": (
        student_class(StudentMultiHead, scale_by="model"),
        "1",
        "divided by sqrt(D) with D = embed_dim = 12",
    ),
    "no W_o": (
        student_class(StudentMultiHead, use_output=False),
        "1",
        "without the output projection",
    ),
    "weights averaged over heads": (
        student_class(StudentMultiHead, weights_as="averaged"),
        "1",
        "Return one map per head, shape (..., H, L, S)",
    ),
    "key and value ignored": (
        student_class(StudentMultiHead, inputs="query only"),
        "4",
        "self-attention over the query alone",
    ),
    "value projected from key": (
        student_class(StudentMultiHead, inputs="value from key"),
        "5",
        "V = self.W_v(value)",
    ),
    "num_heads hard-coded": (
        HardCodedHeads,
        "6",
        "Does it use a number typed by hand instead of embed_dim, num_heads",
    ),
    "NaN for a query that sees nothing": (
        student_class(StudentMultiHead, nan_to_zero=False),
        "11",
        "A query whose mask row is all False got NaN",
    ),
    "fused projection": (FusedProjection, "1", None),
    "constructor without num_heads": (OneArgument, "1", None),
}


@pytest.mark.parametrize(
    ("student", "case", "hint"), MULTI_MISTAKES.values(), ids=MULTI_MISTAKES.keys()
)
def test_multi_head_mistake_is_named(student, case, hint):
    error = failure(check_multi_head_attention, student)
    assert_names(error, "check_multi_head_attention", case, hint)


def test_multi_head_asks_for_four_projections():
    message = " ".join(
        str(failure(check_multi_head_attention, FusedProjection)).split()
    )
    assert "named W_q, W_k, W_v and W_o, as in qkv.MultiHeadAttention" in message
    assert "(its nn.Linear attributes: qkv, out)" in message
    message = " ".join(str(failure(check_multi_head_attention, OneArgument)).split())
    assert "Creating your module with OneArgument(12, 3) raised TypeError" in message


# --- what passes -------------------------------------------------------------------


class TorchHeads(nn.Module):
    """Multi-head attention around PyTorch's fused attention, weights not returned."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (
            nn.Linear(embed_dim, embed_dim, bias=False) for _ in range(4)
        )

    def forward(self, query, key, value, attn_mask=None):
        q, k, v = (
            qkv.split_heads(layer(x), self.num_heads)
            for layer, x in ((self.W_q, query), (self.W_k, key), (self.W_v, value))
        )
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return self.W_o(qkv.concat_heads(context)), None


CORRECT = {
    "qkv attention": (
        check_scaled_dot_product_attention,
        qkv.scaled_dot_product_attention,
        10,
    ),
    "student attention": (check_scaled_dot_product_attention, student_attention, 10),
    "torch attention": (
        check_scaled_dot_product_attention,
        lambda q, k, v, attn_mask=None: F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask
        ),
        10,
    ),
    "qkv SelfAttention": (check_self_attention, qkv.SelfAttention, 9),
    "student SelfAttention without bias": (
        check_self_attention,
        student_class(StudentSelfAttention, bias=False),
        9,
    ),
    "qkv split_heads": (check_split_heads, qkv.split_heads, 5),
    "student split_heads with view": (
        check_split_heads,
        lambda x, h: x.view(*x.shape[:-1], h, x.shape[-1] // h).transpose(-3, -2),
        5,
    ),
    "qkv MultiHeadAttention": (check_multi_head_attention, qkv.MultiHeadAttention, 11),
    "student MultiHeadAttention": (check_multi_head_attention, StudentMultiHead, 11),
    "MultiHeadAttention on torch's attention": (
        check_multi_head_attention,
        TorchHeads,
        11,
    ),
}


@pytest.mark.parametrize(
    ("check", "student", "count"), CORRECT.values(), ids=CORRECT.keys()
)
def test_correct_code_passes(check, student, count):
    result = check(student)
    assert isinstance(result, CheckResult)
    assert result.checker == check.__name__
    assert len(result.cases) == count
    assert result.skipped == ()
    assert repr(result).startswith(f"{check.__name__}: all {count} cases passed.")
    assert repr(result).count("\n") == count + bool(result.weights_unchecked)


def test_result_says_the_weights_went_unchecked_when_none_were_returned():
    """A function that returns only the output passes on its output, and the
    result says that its weights were not checked."""

    def output_only(q, k, v, attn_mask=None):
        return qkv.scaled_dot_product_attention(q, k, v, attn_mask)[0]

    def output_and_none(q, k, v, attn_mask=None):
        return output_only(q, k, v, attn_mask), None

    for student in (output_only, output_and_none):
        result = check_scaled_dot_product_attention(student)
        assert result.weights_unchecked == result.cases
        text = repr(result)
        assert "Weights not checked" in text
        assert "returned no weights in every case" in text
    both = check_scaled_dot_product_attention(qkv.scaled_dot_product_attention)
    assert both.weights_unchecked == ()
    assert "not checked" not in repr(both)


def test_result_counts_the_cases_without_weights():
    result = CheckResult("check_x", ("a", "b", "c"), weights_unchecked=("b",))
    assert "returned no weights in 1 of the 3 cases" in repr(result)


@pytest.mark.parametrize("name", CHECKERS)
def test_passes_with_gradients_off(name):
    """The chapters call torch.set_grad_enabled(False); the gradient cases still
    run, and the caller's setting is kept."""
    check, reference = CHECKERS[name]
    with torch.no_grad():
        result = check(reference)
        assert not torch.is_grad_enabled()
    assert isinstance(result, CheckResult)


# --- the student's random state and the checker's own arguments -------------------


def student_drawing_random_numbers(x, num_heads):
    torch.manual_seed(123)
    noise = torch.randn(x.shape) * 0  # uses, and reseeds, the global generator
    return qkv.split_heads(x + noise, num_heads)


FAILING = {
    "sdpa": SDPA_MISTAKES["no scaling"][0],
    "self": SELF_MISTAKES["no scaling"][0],
    "split": split_no_transpose,
    "multi": MULTI_MISTAKES["no W_o"][0],
}


@pytest.mark.parametrize("passes", [True, False], ids=["passing", "failing"])
@pytest.mark.parametrize("name", CHECKERS)
def test_global_random_state_is_kept(name, passes):
    check, reference = CHECKERS[name]
    torch.manual_seed(7)
    before = torch.get_rng_state()
    if passes:
        check(reference)
    else:
        failure(check, FAILING[name])
    assert torch.equal(torch.get_rng_state(), before)


def test_random_state_kept_when_the_student_reseeds():
    torch.manual_seed(11)
    before = torch.get_rng_state()
    check_split_heads(student_drawing_random_numbers)
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize("name", CHECKERS)
def test_cases_do_not_depend_on_the_global_seed(name):
    check = CHECKERS[name][0]
    student = {
        "sdpa": partial(student_attention, divide_by="8"),
        "self": student_class(StudentSelfAttention, divide_by="nothing"),
        "split": split_strided,
        "multi": HardCodedHeads,
    }[name]
    messages = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        messages.append(str(failure(check, student)))
    assert messages[0] == messages[1]


@pytest.mark.parametrize(
    ("check", "argument", "words"),
    [
        (check_scaled_dot_product_attention, None, "fn must be your function"),
        (check_split_heads, 3, "fn must be your function"),
        (check_self_attention, qkv.SelfAttention(4), "not a module built from it"),
        (check_multi_head_attention, "MyAttention", "cls must be your class"),
    ],
    ids=["None", "a number", "an instance", "a string"],
)
def test_bad_argument_raises_value_error(check, argument, words):
    with pytest.raises(ValueError, match=words):
        check(argument)


def test_masks_must_be_a_bool():
    with pytest.raises(ValueError, match="masks must be True or False"):
        check_self_attention(qkv.SelfAttention, masks="no")


def test_the_call_in_french_names_its_arguments_as_code():
    from qkv.check import _called

    args = [torch.zeros(4, 8), torch.zeros(6, 8, dtype=torch.bool)]
    english = "fn(query, key) with query (4, 8), key (6, 8) bool"
    assert _called("fn", ["query", "key"], args) == english
    try:
        qkv.set_language("fr")
        french = _called("fn", ["query", "key"], args)
    finally:
        qkv.set_language("en")
    assert french == "`fn(query, key)` avec `query` (4, 8), `key` (6, 8) bool"


# --- the order of the pair returned, and a mask with no default ------------------


def attention_weights_first(query, key, value, mask=None):
    output, weights = qkv.scaled_dot_product_attention(query, key, value, mask)
    return weights, output  # the wrong order


def attention_mask_required(query, key, value, attn_mask):
    return qkv.scaled_dot_product_attention(query, key, value, attn_mask)


class SelfWeightsFirst(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.inner = qkv.SelfAttention(embed_dim)
        self.W_q, self.W_k, self.W_v = self.inner.W_q, self.inner.W_k, self.inner.W_v

    def forward(self, x, attn_mask=None):
        output, weights = self.inner(x, attn_mask)
        return weights, output


class SelfMaskRequired(StudentSelfAttention):
    def forward(self, x, attn_mask):
        return super().forward(x, attn_mask)


class MultiWeightsFirst(StudentMultiHead):
    def forward(self, query, key, value, mask=None):
        output, weights = super().forward(query, key, value, mask)
        return weights, output


class MultiMaskRequired(StudentMultiHead):
    def forward(self, query, key, value, attn_mask):
        return super().forward(query, key, value, attn_mask)


WEIGHTS_FIRST = "did you return (weights, output)? Return the output first"
MASK_DEFAULT = "If it is the mask, give it the default None"
ORDER_AND_DEFAULT = {
    "sdpa weights first": (
        check_scaled_dot_product_attention,
        attention_weights_first,
        WEIGHTS_FIRST,
        "",
    ),
    "sdpa mask required": (
        check_scaled_dot_product_attention,
        attention_mask_required,
        MASK_DEFAULT,
        "fn(query, key, value, attn_mask=None)",
    ),
    "self weights first": (
        check_self_attention,
        SelfWeightsFirst,
        WEIGHTS_FIRST,
        "",
    ),
    "self mask required": (
        check_self_attention,
        SelfMaskRequired,
        MASK_DEFAULT,
        "forward(self, x, attn_mask=None)",
    ),
    "multi weights first": (
        check_multi_head_attention,
        MultiWeightsFirst,
        WEIGHTS_FIRST,
        "",
    ),
    "multi mask required": (
        check_multi_head_attention,
        MultiMaskRequired,
        MASK_DEFAULT,
        "forward(self, query, key, value, attn_mask=None)",
    ),
}


@pytest.mark.parametrize("masks", [True, False])
@pytest.mark.parametrize(
    ("check", "student", "hint", "signature"),
    ORDER_AND_DEFAULT.values(),
    ids=ORDER_AND_DEFAULT.keys(),
)
def test_order_and_mask_default_are_named(check, student, hint, signature, masks):
    error = failure(check, student, masks=masks)
    assert_names(error, check.__name__, "1", hint)
    assert signature in " ".join(str(error).split())


def test_mask_default_hint_not_given_for_another_missing_argument_in_a_mask_case():
    def needs_scale(query, key, value, attn_mask, scale):
        return qkv.scaled_dot_product_attention(query, key, value, attn_mask)

    error = failure(check_scaled_dot_product_attention, needs_scale)
    assert MASK_DEFAULT not in " ".join(str(error).split())


@pytest.mark.parametrize(
    "student", [attention_weights_first, attention_mask_required], ids=["order", "mask"]
)
def test_order_and_mask_default_hints_in_french(student):
    try:
        qkv.set_language("fr")
        error = failure(check_scaled_dot_product_attention, student)
    finally:
        qkv.set_language("en")
    message = " ".join(str(error).split())
    assert "Indice :" in message
    assert ("Renvoyez d'abord la sortie" in message) or (
        "donnez-lui la valeur par défaut None" in message
    )
