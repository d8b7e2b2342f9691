"""The explorable of the chapter *writing*: :func:`write_live`, the model writes
in the page.

The trained :class:`qkv.experiments.writer.Writer` runs in the reader's browser:
its weights are exported in the widget's data (float32, little-endian, base64,
with their names and shapes) and the page script (``static/writing.js``) runs
its forward pass with a KV cache, one token per step, in plain JavaScript. The
data also carry a few test prompts and PyTorch's logits for them, which a
browser test compares with the page's (to 1e-4).

Shapes: T positions, V vocabulary, D model dimension, H heads, N layers.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from qkv.language import N_
from qkv.page.explorables._base import Explorable, plain
from qkv.page.explorables.seeded import seeded_uniform
from qkv.validate import check_int

__all__ = ["write_live"]

#: Characters shown in place of those a reader cannot see.
VISIBLE = {" ": "\u2423", "\n": "\u21b5", "\t": "\u21e5"}


def visible(char: str) -> str:
    """A character as the page shows it: a space as "␣", a newline as "↵"."""
    return VISIBLE.get(char, char)


def _check_model(model):
    from qkv.experiments.writer import Writer

    if not isinstance(model, Writer):
        raise ValueError(
            f"model must be a qkv.experiments.writer.Writer, got {type(model).__name__}"
        )
    return model


def weights_from_data(data: dict) -> dict[str, Tensor]:
    """The state dict that the widget's data carry (float32): what the page
    script reads, read the same way in Python."""
    raw = base64.b64decode(data["weights"])
    values = np.frombuffer(raw, dtype="<f4")
    state = {}
    for name, shape, offset in data["tensors"]:
        count = int(np.prod(shape)) if shape else 1
        chunk = values[offset : offset + count].copy()
        state[name] = torch.from_numpy(chunk).reshape(shape)
    return state


class WriteLive(Explorable):
    """The model writes in the page; see :func:`write_live`."""

    kind = "qkv-x-write"
    LABELS = {
        "title": N_("Try it: the model writes, in your browser"),
        "keys": N_(
            "Keys: Tab moves from control to control; in the prompt, Enter "
            "writes one token; in a number box, the up and down arrows change it "
            "(or type it); Enter or Space presses a button; Escape stops the "
            "writing."
        ),
        "prompt": N_("Prompt"),
        "temperature": N_("Temperature (0 = greedy)"),
        "topK": N_("Top-k"),
        "seed": N_("Seed of the sampling"),
        "count": N_("Tokens to write"),
        "layer": N_("Layer"),
        "head": N_("Head"),
        "next": N_("Next token"),
        "write": N_("Write {count}"),
        "stop": N_("Stop"),
        "reset": N_("Reset"),
        "text": N_(
            "The text: the prompt, then what the model wrote (in bold); "
            "the background is the attention of the chosen head from the last "
            "position (framed), darker for less"
        ),
        "probsCaption": N_("The {shown} most likely next tokens after “{last}”"),
        "token": N_("Token"),
        "model": N_("Model (T = 1)"),
        "sampled": N_("Sampled from (T = {temperature}, top-k = {k})"),
        "skipped": N_("Not in the model’s vocabulary, skipped: {chars}."),
        "quoted": N_("“{c}”"),
        "empty": N_("Type at least one character that the model knows."),
        "full": N_(
            "The text fills the model’s {max} positions: it can read no "
            "more, so it writes no more. Reset, or shorten the prompt."
        ),
        "invalid": N_("Not valid, the last valid value is used: {what}."),
        "status": N_("Tokens written: {written}; positions used: {used} of {max}."),
        "size": N_(
            "The weights: {params} numbers, {bytes} bytes as float32, "
            "{chars} characters of base64 in this page."
        ),
        "fig_title": N_("Next-token probabilities after “{prompt}”"),
        "fig_ylabel": N_("probability"),
        "alt": N_(
            "Bar chart of the {shown} most likely next characters after the "
            "prompt “{prompt}”, the most likely “{best}”, with probability {p}."
        ),
    }
    scripts = ("explorable.js", "seeded.js", "writing.js")
    styles = ("explorable.css", "writing.css")
    build = "qkvWriteLive"

    def __init__(
        self,
        model,
        vocabulary: Sequence[str],
        *,
        prompt: str,
        test_prompts: Sequence[str] | None = None,
        temperature: float = 0.8,
        top_k: int = 10,
        seed: int = 0,
        count: int = 40,
        layer: int | None = None,
        head: int = 0,
        shown: int = 10,
        decimals: int = 3,
        lang: str | None = None,
    ) -> None:
        super().__init__(lang, decimals)
        self.model = _check_model(model)
        n_vocab = model.token_embedding.num_embeddings
        if isinstance(vocabulary, str) or not all(
            isinstance(c, str) and len(c) == 1 for c in vocabulary
        ):
            raise ValueError(
                "vocabulary must be a list of single characters, got "
                f"{list(vocabulary)[:8]!r}..."
            )
        self.vocabulary = list(vocabulary)
        if len(self.vocabulary) != n_vocab or len(set(self.vocabulary)) != n_vocab:
            raise ValueError(
                f"vocabulary must hold {n_vocab} distinct characters (the model's "
                f"V), got {len(self.vocabulary)} with "
                f"{len(set(self.vocabulary))} distinct"
            )
        self.index = {c: i for i, c in enumerate(self.vocabulary)}
        self.max_len = model.max_len
        self.prompt = self._check_text("prompt", prompt)
        if test_prompts is None:
            test_prompts = [prompt]
        if isinstance(test_prompts, str) or not 1 <= len(test_prompts) <= 8:
            raise ValueError(
                f"test_prompts must be a list of 1 to 8 strings, got {test_prompts!r}"
            )
        self.test_prompts = [self._check_text("test_prompts", p) for p in test_prompts]
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not 0 <= temperature <= 10
        ):
            raise ValueError(
                f"temperature must be a number in 0..10, got {temperature!r}"
            )
        self.temperature = float(temperature)
        self.top_k = check_int("top_k", top_k, minimum=1)
        if self.top_k > n_vocab:
            raise ValueError(f"top_k must be at most V={n_vocab}, got {top_k}")
        self.seed = check_int("seed", seed, minimum=0)
        if self.seed >= 2**32:
            raise ValueError(f"seed must be an int in 0..2**32 - 1, got {seed}")
        self.count = check_int("count", count, minimum=1)
        if self.count > self.max_len:
            raise ValueError(
                f"count must be at most max_len={self.max_len}, got {count}"
            )
        n_layers, n_heads = len(model.blocks), model.blocks[0].attention.num_heads
        self.layer = n_layers - 1 if layer is None else layer
        self.layer = check_int("layer", self.layer, minimum=0)
        if self.layer >= n_layers:
            raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer}")
        self.head = check_int("head", head, minimum=0)
        if self.head >= n_heads:
            raise ValueError(f"head must be in 0..{n_heads - 1}, got {head}")
        self.shown = check_int("shown", shown, minimum=1)
        if self.shown > min(n_vocab, 30):
            raise ValueError(
                f"shown must be at most {min(n_vocab, 30)} (and V), got {shown}"
            )

    def _check_text(self, name: str, text: str) -> str:
        if not isinstance(text, str) or not text:
            raise ValueError(f"{name} must hold non-empty strings, got {text!r}")
        unknown = sorted({c for c in text if c not in self.index})
        if unknown:
            raise ValueError(
                f"{name} must use the vocabulary's characters only, got "
                f"{unknown[:8]!r} in {text[:40]!r}"
            )
        if len(text) >= self.max_len:
            raise ValueError(
                f"{name} must be shorter than max_len={self.max_len} characters "
                f"(room to write), got {len(text)}"
            )
        return text

    def ids(self, text: str) -> Tensor:
        """The token ids (T,) of ``text``, whose characters are all in the
        vocabulary."""
        return torch.tensor([self.index[c] for c in text], dtype=torch.long)

    def logits(self, text: str) -> Tensor:
        """PyTorch's next-token logits (T, V) at every position of ``text``."""
        with torch.no_grad():
            return self.model(self.ids(text)).float()

    def attention(self, text: str) -> Tensor:
        """The attention weights (N, H, T, T) of every head of ``text``, from
        ``qkv``'s blocks: what the page shows, a row for each position."""
        model = self.model
        rows = []
        with torch.no_grad():
            x = model.token_embedding(self.ids(text))  # (T, D)
            for block in model.blocks:
                _, weights = block.attention(block.norm1(x), is_causal=True)
                rows.append(weights)  # (H, T, T)
                x = block(x, is_causal=True)
        return torch.stack(rows)  # (N, H, T, T)

    def probabilities(self, text: str) -> Tensor:
        """The model's next-token probabilities (V,) after ``text`` (T = 1)."""
        return torch.softmax(self.logits(text)[-1].double(), dim=-1)

    def write(
        self, text: str, new_tokens: int, temperature: float, top_k: int, seed: int
    ) -> str:
        """What the page writes after ``text`` with these settings, drawn as the
        page draws (mulberry32 from ``seed``, one uniform number per sampled
        token, the first token whose cumulative probability passes it); greedy
        (temperature 0) is :func:`qkv.experiments.writer.generate`'s."""
        ids = self.ids(self._check_text("text", text)).tolist()
        steps = min(
            check_int("new_tokens", new_tokens, minimum=0), self.max_len - len(ids)
        )
        draws = iter(seeded_uniform(seed, steps))
        for _ in range(steps):
            logits = self.logits_of(ids)
            if temperature == 0:
                ids.append(int(logits.argmax()))
                continue
            scaled = logits / temperature
            if top_k < scaled.shape[0]:
                threshold = scaled.sort(descending=True).values[top_k - 1]
                scaled = scaled.masked_fill(scaled < threshold, float("-inf"))
            probabilities = torch.softmax(scaled, dim=-1).tolist()
            uniform, total = next(draws), 0.0
            chosen = max(i for i, p in enumerate(probabilities) if p > 0)
            for i, p in enumerate(probabilities):
                if p > 0:
                    total += p
                    if uniform < total:
                        chosen = i
                        break
            ids.append(chosen)
        return "".join(self.vocabulary[i] for i in ids[len(text) :])

    def logits_of(self, ids: list[int]) -> Tensor:
        """PyTorch's logits (V,) after the token ids ``ids``, in float64."""
        with torch.no_grad():
            return self.model(torch.tensor(ids, dtype=torch.long))[-1].double()

    def exported(self) -> tuple[str, list]:
        """The weights as base64 of float32 little-endian numbers, and the list
        of ``[name, shape, offset]`` of each tensor (offset in numbers)."""
        chunks, tensors, offset = [], [], 0
        for name, tensor in self.model.state_dict().items():
            values = tensor.detach().cpu().float().numpy().astype("<f4").ravel()
            tensors.append([name, list(tensor.shape), offset])
            chunks.append(values.tobytes())
            offset += values.size
        return base64.b64encode(b"".join(chunks)).decode("ascii"), tensors

    @property
    def weight_bytes(self) -> int:
        """The size of the weights as float32 (before base64), in bytes."""
        return 4 * sum(t.numel() for t in self.model.state_dict().values())

    def _payload(self) -> dict:
        weights, tensors = self.exported()
        block = self.model.blocks[0]
        return {
            **self._common(),
            "weights": weights,
            "tensors": tensors,
            "sizes": {
                "V": len(self.vocabulary),
                "D": self.model.token_embedding.embedding_dim,
                "H": block.attention.num_heads,
                "N": len(self.model.blocks),
                "F": block.feed_forward.linear1.out_features,
                "max_len": self.max_len,
            },
            "eps": [[b.norm1.eps, b.norm2.eps] for b in self.model.blocks]
            + [[self.model.norm.eps]],
            "base": 10000.0,
            "vocabulary": self.vocabulary,
            "visible": VISIBLE,
            "prompt": self.prompt,
            "test_prompts": self.test_prompts,
            "test_logits": [self.logits(p)[-1].tolist() for p in self.test_prompts],
            "temperature": self.temperature,
            "top_k": self.top_k,
            "seed": self.seed,
            "count": self.count,
            "layer": self.layer,
            "head": self.head,
            "shown": self.shown,
            "weight_bytes": self.weight_bytes,
            "params": self.weight_bytes // 4,
        }

    def _top(self) -> tuple[list[str], np.ndarray]:
        probs = self.probabilities(self.prompt)
        top = probs.topk(self.shown)
        chars = [visible(self.vocabulary[i]) for i in top.indices.tolist()]
        return chars, top.values.numpy()

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.page.plot import WEIGHTS_CMAP

        chars, values = self._top()
        fig, ax = plt.subplots(figsize=(6.8, 3.4), layout="constrained")
        ax.bar(np.arange(len(chars)), values, color=plt.get_cmap(WEIGHTS_CMAP)(0.35))
        ax.set_xticks(np.arange(len(chars)), labels=[plain(c) for c in chars])
        ax.set_ylabel(self._text("fig_ylabel"))
        shown = self.prompt if len(self.prompt) <= 40 else "…" + self.prompt[-39:]
        ax.set_title(self._text("fig_title", prompt=plain(shown.replace("\n", "↵"))))
        return fig

    def static_alt(self) -> str:
        chars, values = self._top()
        p = f"{values[0]:.{self.decimals}f}"
        if (self.lang or "en") == "fr":
            p = p.replace(".", ",")
        return self._text(
            "alt", shown=len(chars), prompt=self.prompt, best=chars[0], p=p
        )

    def __repr__(self) -> str:
        return (
            f"WriteLive(V={len(self.vocabulary)}, {self.weight_bytes} bytes of "
            f"weights, prompt {self.prompt!r})"
        )


def write_live(
    model,
    vocabulary: Sequence[str],
    *,
    prompt: str,
    test_prompts: Sequence[str] | None = None,
    temperature: float = 0.8,
    top_k: int = 10,
    seed: int = 0,
    count: int = 40,
    layer: int | None = None,
    head: int = 0,
    shown: int = 10,
    decimals: int = 3,
    lang: str | None = None,
) -> WriteLive:
    """The model writes in the page: its forward pass in JavaScript, from its
    exported weights, one token at a time.

    For the chapter *writing*. The reader types a prompt, picks the temperature
    (0 is greedy), the top-k and the seed of the sampling (mulberry32, as
    ``static/seeded.js``: the same seed replays the same text), and presses
    "next token" or "write N" (one token per frame, "stop" to stop). At each
    step the page shows the most likely next tokens, with the model's
    probabilities and those sampled from, and the attention of one chosen
    layer and head from the last position over the whole text. Characters
    outside the vocabulary are skipped (the page says which); the writing stops
    at ``max_len`` positions (the page says so). The weights are float32,
    little-endian, base64 in the widget's data (:func:`weights_from_data` reads
    them back); the page runs them with a KV cache.

    Args:
        model: a :class:`qkv.experiments.writer.Writer` (any sizes).
        vocabulary: the character of each token id, V of them.
        prompt: the prompt at first (and of the static figure).
        test_prompts: prompts whose last-position logits from PyTorch the data
            carry (default: ``[prompt]``), for a browser test.
        temperature: at first; 0 is greedy.
        top_k: at first, 1..V.
        seed: the seed of the sampling at first, 0..2**32 - 1.
        count: how many tokens "write N" writes at first.
        layer: the layer whose attention is shown (default: the last).
        head: the head whose attention is shown.
        shown: how many next tokens the table shows (at most 30).
        decimals: decimals of the probabilities shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        A :class:`WriteLive`. Its root publishes ``data-tokens`` (the ids of the
        text), ``data-probabilities`` (the model's (V,) next-token
        probabilities), ``data-weights`` (the chosen head's attention from the
        last position) and has a test hook ``root.qkvWriteLogits(text)``: the
        page's logits (T, V) at every position of ``text``.

    Raises:
        ValueError: if an argument has the wrong type, shape or range (a prompt
            with a character outside the vocabulary, a head that does not exist).
    """
    return WriteLive(
        model,
        vocabulary,
        prompt=prompt,
        test_prompts=test_prompts,
        temperature=temperature,
        top_k=top_k,
        seed=seed,
        count=count,
        layer=layer,
        head=head,
        shown=shown,
        decimals=decimals,
        lang=lang,
    )
