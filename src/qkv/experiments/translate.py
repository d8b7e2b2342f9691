"""Cross-attention: a tiny encoder-decoder that translates French into English.

Explained in the chapter *cross-attention*. The task is small enough to train in
seconds and has the one thing that makes translation need attention: the word
order changes. A French adjective of colour or kind follows its noun and agrees
with it in gender and number; the English adjective comes first and never
changes:

    le chat noir mange la souris grise     ->  the black cat eats the grey mouse
    les vaches blanches dorment            ->  the white cows sleep

The model is the encoder-decoder of Sutskever et al. (2014) with the attention of
Bahdanau et al. (2015), built from Transformer layers (Vaswani et al. 2017): the
encoder reads the French sentence with self-attention; the decoder writes the
English one word after word with causal self-attention over what it has written
and *cross-attention* over the encoder's outputs (queries from the decoder, keys
and values from the encoder). The cross-attention weights are an alignment: which
French word each English word was read from.

The cross-attention score is the scaled dot product by default; Bahdanau's
additive score ``v^T tanh(W_1 q + W_2 k)`` is an option (:class:`AdditiveAttention`).

Shape legend (that of :mod:`qkv.attention`): B sentences, H heads, L target
(English) length, S source (French) length, D model dimension, Ly layers.

Held-out sentences test *new combinations*: one adjective per noun is never seen
with that noun in training (``la vache brune`` may be held out while ``la vache
noire`` and ``le chat brun`` are trained on); a held-out sentence contains at
least one such pair.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention, padding_mask, split_heads
from qkv.language import gettext
from qkv.transformer import FeedForward, TransformerBlock, sinusoidal_positions
from qkv.validate import check_int

__all__ = [
    "ADJECTIVES",
    "NOUNS",
    "VERBS",
    "AdditiveAttention",
    "Alignment",
    "DecoderBlock",
    "Phrase",
    "Sentence",
    "TrainResult",
    "Translator",
    "adjective_alignment",
    "align",
    "all_sentences",
    "cross_weights",
    "encode_source",
    "encode_target",
    "exact_match",
    "greedy_decode",
    "heldout_pairs",
    "heldout_sentences",
    "random_sentence",
    "score_label",
    "split_phrases",
    "train",
    "translate",
]

#: The attention scores a :class:`Translator` may use, as a page names them,
#: per language (the English label is the key).


def _message(english: str, **values: object) -> str:
    """The message ``english`` in the current language, filled with ``values``."""
    return gettext(english).format(**values)


def score_label(score: str) -> str:
    """The name of the attention score ``score`` (``"dot"`` or ``"additive"``,
    the ``score`` of :func:`train`) as a page shows it, in the language of
    :func:`qkv.set_language` (explained in the chapter *cross-attention*).

    Raises:
        ValueError: if ``score`` is not one of the scores.
    """
    if score not in ("dot", "additive"):
        raise ValueError(f"score must be 'dot' or 'additive', got {score!r}")
    return gettext("dot") if score == "dot" else gettext("additive")


#: Nouns: (French singular, French plural, feminine?, English singular, plural).
#: No noun starts with a vowel (no elision: "le", "la"), no irregular French plural.
NOUNS: tuple[tuple[str, str, bool, str, str], ...] = (
    ("chat", "chats", False, "cat", "cats"),
    ("chien", "chiens", False, "dog", "dogs"),
    ("lapin", "lapins", False, "rabbit", "rabbits"),
    ("loup", "loups", False, "wolf", "wolves"),
    ("renard", "renards", False, "fox", "foxes"),
    ("souris", "souris", True, "mouse", "mice"),
    ("vache", "vaches", True, "cow", "cows"),
    ("poule", "poules", True, "hen", "hens"),
    ("chèvre", "chèvres", True, "goat", "goats"),
    ("tortue", "tortues", True, "turtle", "turtles"),
)
#: Adjectives, placed after the noun in French:
#: (masculine singular, feminine singular, masculine plural, feminine plural, English).
ADJECTIVES: tuple[tuple[str, str, str, str, str], ...] = (
    ("noir", "noire", "noirs", "noires", "black"),
    ("blanc", "blanche", "blancs", "blanches", "white"),
    ("gris", "grise", "gris", "grises", "grey"),
    ("brun", "brune", "bruns", "brunes", "brown"),
    ("sauvage", "sauvage", "sauvages", "sauvages", "wild"),
    ("rapide", "rapide", "rapides", "rapides", "fast"),
)
#: Verbs: (French singular, French plural, English singular, English plural,
#: transitive?).
VERBS: tuple[tuple[str, str, str, str, bool], ...] = (
    ("dort", "dorment", "sleeps", "sleep", False),
    ("mange", "mangent", "eats", "eat", True),
    ("voit", "voient", "sees", "see", True),
    ("chasse", "chassent", "chases", "chase", True),
)

PAD, BOS, EOS = "[pad]", "[bos]", "[eos]"


@dataclass(frozen=True)
class Phrase:
    """A noun phrase: determiner, noun and adjective, singular or plural.

    Explained in the chapter *cross-attention*.

    Attributes:
        noun: index into :data:`NOUNS`.
        adjective: index into :data:`ADJECTIVES`.
        plural: whether there are several.
    """

    noun: int
    adjective: int
    plural: bool

    def french(self) -> list[str]:
        """``le chat noir``, ``la souris grise``, ``les chats noirs``: the
        adjective after the noun, agreeing with it in gender and number."""
        singular, plural, feminine, _, _ = NOUNS[self.noun]
        forms = ADJECTIVES[self.adjective]
        if self.plural:
            return ["les", plural, forms[3] if feminine else forms[2]]
        return [
            "la" if feminine else "le",
            singular,
            forms[1] if feminine else forms[0],
        ]

    def english(self) -> list[str]:
        """``the black cat``, ``the grey mice``: the adjective first, invariable."""
        _, _, _, singular, plural = NOUNS[self.noun]
        return [
            "the",
            ADJECTIVES[self.adjective][4],
            plural if self.plural else singular,
        ]


@dataclass(frozen=True)
class Sentence:
    """Subject, verb and, for a transitive verb, an object.

    Explained in the chapter *cross-attention*.

    Attributes:
        subject: the subject's :class:`Phrase`.
        verb: index into :data:`VERBS`; it agrees with the subject in number.
        object: the object's :class:`Phrase`, or None for an intransitive verb.
    """

    subject: Phrase
    verb: int
    object: Phrase | None = None

    def french(self) -> list[str]:
        """The French sentence, as words."""
        verb = VERBS[self.verb][1 if self.subject.plural else 0]
        rest = self.object.french() if self.object else []
        return [*self.subject.french(), verb, *rest]

    def english(self) -> list[str]:
        """Its English translation, as words."""
        verb = VERBS[self.verb][3 if self.subject.plural else 2]
        rest = self.object.english() if self.object else []
        return [*self.subject.english(), verb, *rest]

    def phrases(self) -> list[Phrase]:
        """The noun phrases of the sentence (one or two)."""
        return [self.subject] + ([self.object] if self.object else [])

    def alignment(self) -> list[tuple[int, int]]:
        """The true word alignment: ``(English index, French index)`` per English word.

        ``the black cat eats ...`` / ``le chat noir mange ...`` gives
        ``[(0, 0), (1, 2), (2, 1), (3, 3), ...]``: the adjective and the noun
        swap places, every other word stays.
        """
        pairs = []
        for start in range(0, len(self.english()), 4):  # phrases at 0 and 4
            pairs += [(start, start), (start + 1, start + 2), (start + 2, start + 1)]
            if start == 0:
                pairs.append((3, 3))  # the verb
        return pairs

    def adjectives(self) -> list[tuple[int, int]]:
        """``(English index, French index)`` of each adjective (one or two)."""
        return [pair for pair in self.alignment() if pair[0] % 4 == 1]


def _vocabulary(words: list[str], specials: tuple[str, ...]) -> tuple[str, ...]:
    return (*specials, *dict.fromkeys(words))


def _all_phrases() -> list[Phrase]:
    return [
        Phrase(n, a, plural)
        for n, a, plural in itertools.product(
            range(len(NOUNS)), range(len(ADJECTIVES)), (False, True)
        )
    ]


def all_sentences() -> list[Sentence]:
    """Every sentence of the task, in a fixed order.

    Explained in the chapter *cross-attention*. An intransitive verb takes a
    subject only; a transitive one a subject and an object.
    """
    phrases = _all_phrases()
    sentences = []
    for subject in phrases:
        for verb, (*_, transitive) in enumerate(VERBS):
            if transitive:
                sentences += [Sentence(subject, verb, obj) for obj in phrases]
            else:
                sentences.append(Sentence(subject, verb))
    return sentences


#: The French and the English vocabularies, special tokens first.
SOURCE_VOCAB: tuple[str, ...] = _vocabulary(
    [w for s in (Sentence(p, 0) for p in _all_phrases()) for w in s.french()]
    + [w for verb in VERBS for w in verb[:2]]
    + ["le", "la", "les"],
    (PAD,),
)
TARGET_VOCAB: tuple[str, ...] = _vocabulary(
    [w for s in (Sentence(p, 0) for p in _all_phrases()) for w in s.english()]
    + [w for verb in VERBS for w in verb[2:4]],
    (PAD, BOS, EOS),
)
SOURCE_ID = {word: i for i, word in enumerate(SOURCE_VOCAB)}
TARGET_ID = {word: i for i, word in enumerate(TARGET_VOCAB)}
#: The longest sentence, in words (both languages): two phrases and a verb.
MAX_WORDS = len(Sentence(Phrase(0, 0, False), 1, Phrase(0, 0, False)).french())


def heldout_pairs(split_seed: int = 0) -> set[tuple[int, int]]:
    """The (noun, adjective) pairs never seen together in training.

    Explained in the chapter *cross-attention*. One adjective per noun, drawn so
    that every adjective is held out with at least one noun; each noun and each
    adjective is still seen in training, with other partners.

    Returns:
        A set of ``(noun index, adjective index)``, one per noun.
    """
    rng = random.Random(split_seed)
    order = list(range(len(ADJECTIVES)))
    rng.shuffle(order)
    nouns = list(range(len(NOUNS)))
    rng.shuffle(nouns)
    return {(noun, order[i % len(order)]) for i, noun in enumerate(nouns)}


def split_phrases(split_seed: int = 0) -> tuple[list[Phrase], list[Phrase]]:
    """Noun phrases for training, and the held-out ones (:func:`heldout_pairs`).

    Explained in the chapter *cross-attention*.

    Returns:
        ``(train, heldout)``, each pair of noun and adjective in the singular
        and in the plural.
    """
    pairs = heldout_pairs(split_seed)
    train_phrases, heldout = [], []
    for phrase in _all_phrases():
        new = (phrase.noun, phrase.adjective) in pairs
        (heldout if new else train_phrases).append(phrase)
    return train_phrases, heldout


def random_sentence(rng: random.Random, phrases: list[Phrase]) -> Sentence:
    """A sentence whose noun phrases are drawn from ``phrases`` and its verb
    uniformly from :data:`VERBS` (intransitive ones included).

    Explained in the chapter *cross-attention*: training draws its sentences so.
    """
    subject = rng.choice(phrases)
    verb = rng.randrange(len(VERBS))
    return Sentence(subject, verb, rng.choice(phrases) if VERBS[verb][4] else None)


def heldout_sentences(split_seed: int = 0, n: int = 1000) -> list[Sentence]:
    """The held-out sentences: each has at least one held-out noun phrase.

    Explained in the chapter *cross-attention*. Every held-out intransitive
    sentence (there are few), then distinct transitive ones drawn with
    ``random.Random(split_seed)`` until there are ``n``.
    """
    _, new_phrases = split_phrases(split_seed)
    new = set(new_phrases)
    short = [
        Sentence(p, verb)
        for p in new_phrases
        for verb, (*_, transitive) in enumerate(VERBS)
        if not transitive
    ]
    long = [
        s
        for s in all_sentences()
        if s.object is not None and (s.subject in new or s.object in new)
    ]
    if n < len(short) or n > len(short) + len(long):
        raise ValueError(
            f"n must be between {len(short)} and {len(short) + len(long)}, got {n}"
        )
    return short + random.Random(split_seed).sample(long, n - len(short))


def encode_source(sentences: list[list[str]]) -> tuple[Tensor, Tensor]:
    """French sentences as token ids for the encoder.

    Explained in the chapter *cross-attention*.

    Args:
        sentences: B lists of French words.

    Returns:
        ``(ids, keep)``: ids (B, S) right-padded with ``[pad]`` (id 0), and keep
        (B, S), True for real words (:func:`~qkv.attention.padding_mask`).

    Raises:
        ValueError: on an empty sentence or an unknown word (named).
    """
    for words in sentences:
        if not words:
            raise ValueError(
                _message("a sentence to translate must have at least one word")
            )
        for word in words:
            if word not in SOURCE_ID or word == PAD:
                raise ValueError(
                    _message(
                        "unknown French word {word} in {sentence}; "
                        "known words: {known}",
                        word=repr(word),
                        sentence=repr(" ".join(words)),
                        known=", ".join(SOURCE_VOCAB[1:]),
                    )
                )
    lengths = [len(words) for words in sentences]
    keep = padding_mask(lengths)  # (B, S)
    width = keep.shape[1]
    padded = [
        [SOURCE_ID[w] for w in words] + [SOURCE_ID[PAD]] * (width - len(words))
        for words in sentences
    ]
    ids = torch.tensor(padded, dtype=torch.long).reshape(keep.shape)  # (B, S)
    return ids, keep


def encode_target(sentences: list[list[str]]) -> tuple[Tensor, Tensor]:
    """English sentences as decoder inputs and outputs, shifted by one.

    Explained in the chapter *cross-attention* (teacher forcing).

    Args:
        sentences: B lists of English words.

    Returns:
        ``(inputs, outputs)``: ``[bos] w1 .. wn`` and ``w1 .. wn [eos]``, both
        (B, L) right-padded with ``[pad]`` (id 0).
    """
    width = max(len(words) for words in sentences) + 1
    inputs, outputs = [], []
    for words in sentences:
        ids = [TARGET_ID[w] for w in words]
        padding = [TARGET_ID[PAD]] * (width - len(ids) - 1)
        inputs.append([TARGET_ID[BOS], *ids, *padding])
        outputs.append([*ids, TARGET_ID[EOS], *padding])
    return torch.tensor(inputs), torch.tensor(outputs)  # (B, L), (B, L)


class AdditiveAttention(nn.Module):
    """Multi-head attention with Bahdanau's additive score.

    Explained in the chapter *cross-attention*, as the history of attention:
    Bahdanau et al. (2015) scored a decoder state q against an encoder state k
    with a small network,

        score(q, k) = v^T tanh(W_1 q + W_2 k),

    instead of the dot product ``q . k / sqrt(E)`` of Vaswani et al. (2017). Here
    each head has its own slice of ``W_1 q`` and ``W_2 k`` and its own vector v;
    the softmax, the weighted sum of values W_v and the output projection W_o
    are as in :class:`~qkv.attention.MultiHeadAttention`, and so is the number
    of parameters, 4 (D^2 + D). It costs an (L, S, E) tensor per head where the
    dot product needs one (L, S) matrix product.

    Args:
        embed_dim: D, divisible by ``num_heads``.
        num_heads: H.
    """

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        for name, size in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            check_int(name, size, minimum=1)
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        head_dim = embed_dim // num_heads
        self.W_1 = nn.Linear(embed_dim, embed_dim)  # the queries' part
        self.W_2 = nn.Linear(embed_dim, embed_dim, bias=False)  # the keys' part
        self.v = nn.Parameter(torch.randn(num_heads, head_dim) / head_dim**0.5)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor | None = None,
        attn_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Attend from ``query`` to ``key``/``value`` with the additive score.

        Args:
            query: shape (B, L, D).
            key: shape (B, S, D).
            value: shape (B, S, D); defaults to ``key``.
            attn_mask: optional bool mask broadcastable to (B, H, L, S);
                True = may attend.

        Returns:
            ``(output, weights)``: (B, L, D) and (B, H, L, S).
        """
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.dim() != 3 or x.shape[-1] != self.embed_dim:
                raise ValueError(
                    f"{name} must have shape (B, T, {self.embed_dim}), "
                    f"got {tuple(x.shape)}"
                )
        q = split_heads(self.W_1(query), self.num_heads)  # (B, H, L, E)
        k = split_heads(self.W_2(key), self.num_heads)  # (B, H, S, E)
        v = split_heads(self.W_v(value), self.num_heads)  # (B, H, S, E)
        hidden = torch.tanh(q[:, :, :, None, :] + k[:, :, None, :, :])  # (B,H,L,S,E)
        scores = (hidden * self.v[None, :, None, None, :]).sum(-1)  # (B, H, L, S)
        if attn_mask is not None:
            # As in qkv.attention: a query with no key gets zero weights, not NaN.
            attn_mask = attn_mask.expand(scores.shape)
            scores = scores.masked_fill(~attn_mask, float("-inf"))
            scores = scores.masked_fill(~attn_mask.any(-1, keepdim=True), 0.0)
        weights = torch.softmax(scores, dim=-1)  # (B, H, L, S)
        if attn_mask is not None:
            weights = weights.masked_fill(~attn_mask, 0.0)
        context = weights @ v  # (B, H, L, E)
        output = self.W_o(context.transpose(1, 2).flatten(2))  # (B, L, D)
        return output, weights


class DecoderBlock(nn.Module):
    """Causal self-attention, cross-attention and a feed-forward network.

    Explained in the chapter *cross-attention*. Each sub-layer is wrapped, as in
    :class:`~qkv.transformer.TransformerBlock`, in a residual connection and a
    layer norm (post-norm):

        x = LayerNorm(x + SelfAttention(x, causal))
        x = LayerNorm(x + CrossAttention(queries x, keys and values memory))
        x = LayerNorm(x + FeedForward(x))

    Args:
        embed_dim: D.
        num_heads: H.
        ff_dim: F.
        score: ``"dot"`` (:class:`~qkv.attention.MultiHeadAttention`) or
            ``"additive"`` (:class:`AdditiveAttention`) for the cross-attention.
    """

    def __init__(
        self, embed_dim: int, num_heads: int, ff_dim: int, score: str = "dot"
    ) -> None:
        super().__init__()
        if score not in ("dot", "additive"):
            raise ValueError(f"score must be 'dot' or 'additive', got {score!r}")
        self.self_attention = MultiHeadAttention(embed_dim, num_heads)
        self.norm1 = nn.LayerNorm(embed_dim)
        if score == "dot":
            self.cross_attention = MultiHeadAttention(embed_dim, num_heads)
        else:
            self.cross_attention = AdditiveAttention(embed_dim, num_heads)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.feed_forward = FeedForward(embed_dim, ff_dim)
        self.norm3 = nn.LayerNorm(embed_dim)

    def forward(
        self, x: Tensor, memory: Tensor, memory_keep: Tensor
    ) -> tuple[Tensor, Tensor]:
        """One decoder layer.

        Args:
            x: the decoder's vectors, (B, L, D).
            memory: the encoder's outputs, (B, S, D).
            memory_keep: (B, S), True for real source words (not padding).

        Returns:
            ``(x, cross_weights)``: (B, L, D) and (B, H, L, S).
        """
        # Causal: position i sees the words written before it, never after, so
        # right-padding of the target is never seen by a real word either.
        context, _ = self.self_attention(x, is_causal=True, need_weights=False)
        x = self.norm1(x + context)  # (B, L, D)
        context, cross_weights = self.cross_attention(
            x, memory, memory, attn_mask=memory_keep[:, None, None, :]
        )  # (B, L, D), (B, H, L, S)
        x = self.norm2(x + context)
        return self.norm3(x + self.feed_forward(x)), cross_weights


class Translator(nn.Module):
    """The encoder-decoder: French words in, English word scores out.

    Explained in the chapter *cross-attention*. Word embeddings plus sinusoidal
    positions on both sides; ``num_layers``
    :class:`~qkv.transformer.TransformerBlock` in the encoder (padding hidden),
    ``num_layers`` :class:`DecoderBlock` in the decoder, a linear layer to the
    English vocabulary. Sentences of up to ``max_len`` words (the task's
    longest, plus one for ``[bos]``).

    Args:
        embed_dim: D.
        num_heads: H.
        num_layers: Ly, in the encoder and in the decoder.
        ff_dim: F.
        score: the cross-attention score, ``"dot"`` or ``"additive"``.
        max_len: the most positions on either side.
    """

    def __init__(
        self,
        embed_dim: int = 64,
        num_heads: int = 4,
        num_layers: int = 1,
        ff_dim: int = 128,
        score: str = "dot",
        max_len: int = MAX_WORDS + 1,
    ) -> None:
        super().__init__()
        for name, value in (
            ("embed_dim", embed_dim),
            ("num_heads", num_heads),
            ("num_layers", num_layers),
            ("ff_dim", ff_dim),
            ("max_len", max_len),  # the longest sentence it reads or writes
        ):
            check_int(name, value, minimum=1)
        self.score = score
        self.max_len = max_len
        self.source_embedding = nn.Embedding(len(SOURCE_VOCAB), embed_dim)
        self.target_embedding = nn.Embedding(len(TARGET_VOCAB), embed_dim)
        self.register_buffer("positions", sinusoidal_positions(max_len, embed_dim))
        self.encoder = nn.ModuleList(
            TransformerBlock(embed_dim, num_heads, ff_dim) for _ in range(num_layers)
        )
        self.decoder = nn.ModuleList(
            DecoderBlock(embed_dim, num_heads, ff_dim, score) for _ in range(num_layers)
        )
        self.output = nn.Linear(embed_dim, len(TARGET_VOCAB))

    def encode(self, source: Tensor, source_keep: Tensor) -> Tensor:
        """source (B, S) ids, source_keep (B, S) -> memory (B, S, D)."""
        self._check_length("source", source)
        x = self.source_embedding(source) + self.positions[: source.shape[1]]
        for block in self.encoder:
            x = block(x, attn_mask=source_keep[:, None, None, :])  # (B, S, D)
        return x

    def decode(
        self, target_in: Tensor, memory: Tensor, source_keep: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Scores of the next English word at every target position.

        Args:
            target_in: (B, L) ids, ``[bos]`` first.
            memory: (B, S, D) from :meth:`encode`.
            source_keep: (B, S).

        Returns:
            ``(logits, cross_weights)``: (B, L, vocabulary) and (B, Ly, H, L, S).
        """
        self._check_length("target_in", target_in)
        x = self.target_embedding(target_in) + self.positions[: target_in.shape[1]]
        all_weights = []
        for block in self.decoder:
            x, weights = block(x, memory, source_keep)  # (B, L, D), (B, H, L, S)
            all_weights.append(weights)
        return self.output(x), torch.stack(all_weights, dim=1)

    def _check_length(self, name: str, ids: Tensor) -> None:
        if ids.dim() != 2 or ids.shape[1] > self.max_len:
            raise ValueError(
                f"{name} must have shape (B, at most {self.max_len}), "
                f"got {tuple(ids.shape)}"
            )

    def forward(
        self, source: Tensor, source_keep: Tensor, target_in: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Teacher forcing: (B, S), (B, S), (B, L) -> logits (B, L, vocabulary)
        and cross-attention weights (B, Ly, H, L, S)."""
        return self.decode(target_in, self.encode(source, source_keep), source_keep)


def greedy_decode(
    model: Translator, sources: list[list[str]], max_len: int | None = None
) -> tuple[list[list[str]], Tensor]:
    """Translate word by word, always taking the most likely next word.

    Explained in the chapter *cross-attention*. At step t the decoder sees the
    words it has written so far (causal self-attention) and the whole French
    sentence (cross-attention); it stops at ``[eos]`` or after ``max_len`` words.

    Args:
        model: a :class:`Translator`.
        sources: French sentences as lists of words.
        max_len: the most words to write, ``[eos]`` included (default and
            largest: ``model.max_len``).

    Returns:
        ``(translations, cross_weights)``: the English words of each sentence
        (without ``[eos]``), and the cross-attention weights of the last step,
        (B, Ly, H, L, S), L = the longest translation + 1 (the step that wrote
        ``[eos]``).
    """
    if not isinstance(model, Translator):
        raise ValueError(f"model must be a Translator, got {type(model).__name__}")
    for number, words in enumerate(sources):
        _check_fits(model, words, "" if len(sources) == 1 else f" {number}")
    max_len = model.max_len if max_len is None else max_len
    if isinstance(max_len, bool) or not isinstance(max_len, int):
        raise ValueError(f"max_len must be an int, got {max_len!r}")
    if not 1 <= max_len <= model.max_len:
        raise ValueError(f"max_len must be in 1..{model.max_len}, got {max_len}")
    source, keep = encode_source(sources)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source, keep)  # (B, S, D)
        written = torch.full((len(sources), 1), TARGET_ID[BOS])  # (B, 1)
        done = torch.zeros(len(sources), dtype=torch.bool)
        for _ in range(max_len):
            logits, weights = model.decode(written, memory, keep)
            next_word = logits[:, -1].argmax(dim=-1)  # (B,)
            next_word = next_word.masked_fill(done, TARGET_ID[PAD])
            written = torch.cat([written, next_word[:, None]], dim=1)
            done |= next_word == TARGET_ID[EOS]
            if done.all():
                break
    model.train(was_training)
    translations = []
    for row in written[:, 1:].tolist():
        words = [TARGET_VOCAB[i] for i in row]
        translations.append(words[: words.index(EOS)] if EOS in words else words)
    return translations, weights


def _check_fits(model: Translator, words: list[str], number: str = "") -> None:
    """``ValueError`` if the sentence is longer than the model reads."""
    if len(words) > model.max_len:
        raise ValueError(
            f"sentence{number} has {len(words)} words; this model reads at most "
            f"{model.max_len} (its max_len): {' '.join(words[:8])} ..."
        )


def _words(sentence: str | list[str]) -> list[str]:
    if isinstance(sentence, str):
        words = sentence.split()
    elif isinstance(sentence, (list, tuple)) and all(
        isinstance(word, str) for word in sentence
    ):
        words = list(sentence)
    else:
        raise ValueError(
            _message(
                "sentence must be a str of words separated by spaces, or a list of "
                "words (str), got {sentence} of type {type}",
                sentence=repr(sentence),
                type=type(sentence).__name__,
            )
        )
    if not words:
        raise ValueError(
            _message(
                "sentence must have at least one word, got {sentence}",
                sentence=repr(sentence),
            )
        )
    return [w.lower() for w in words]


def translate(model: Translator, sentence: str | list[str]) -> str:
    """Translate one French sentence into English by greedy decoding.

    Explained in the chapter *cross-attention*.

    Args:
        model: a trained :class:`Translator`.
        sentence: French words separated by spaces (or a list of words).

    Returns:
        The English sentence, words separated by spaces.

    Raises:
        ValueError: if ``sentence`` is empty or has a word the model does not
            know (the message names it).
    """
    translations, _ = greedy_decode(model, [_words(sentence)])
    return " ".join(translations[0])


@dataclass
class Alignment:
    """What the decoder read while it translated one sentence.

    Explained in the chapter *cross-attention*; returned by :func:`align`.

    Attributes:
        source: the French words (S).
        target: the English words written, ``[eos]`` last (L).
        weights: cross-attention weights, (Ly, H, L, S): row i is what the
            decoder looked at while writing ``target[i]``.
        mean: the weights averaged over the heads of each layer, (Ly, L, S).
        argmax: for each layer and head, the source index each target word
            attends to most, (Ly, H, L).
        mean_argmax: the same for ``mean``, (Ly, L).
    """

    source: list[str]
    target: list[str]
    weights: Tensor
    mean: Tensor
    argmax: Tensor
    mean_argmax: Tensor


def _teacher_forced_weights(
    model: Translator, sources: list[list[str]], targets: list[list[str]]
) -> Tensor:
    """Cross-attention weights of the decoder fed ``targets``: (B, Ly, H, L, S)."""
    source, keep = encode_source(sources)
    target_in, _ = encode_target(targets)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        _, weights = model(source, keep, target_in)  # (B, Ly, H, L, S)
    model.train(was_training)
    return weights


def align(model: Translator, sentence: str | list[str]) -> Alignment:
    """Translate a sentence and return its alignment: the cross-attention weights.

    Explained in the chapter *cross-attention*. The weights are those of a
    teacher-forced pass over the greedy translation; they equal those of the
    greedy steps, since the causal mask makes row i depend on the words before
    i only.

    Raises:
        ValueError: as :func:`translate`.
    """
    source = _words(sentence)
    translations, _ = greedy_decode(model, [source])
    weights = _teacher_forced_weights(model, [source], translations)[0]  # (Ly,H,L,S)
    mean = weights.mean(dim=1)  # (Ly, L, S)
    return Alignment(
        source=source,
        target=[*translations[0], EOS],
        weights=weights,
        mean=mean,
        argmax=weights.argmax(dim=-1),  # (Ly, H, L)
        mean_argmax=mean.argmax(dim=-1),  # (Ly, L)
    )


def cross_weights(model: Translator, sentences: list[Sentence]) -> Tensor:
    """Cross-attention weights while writing the right translations (teacher forcing).

    Explained in the chapter *cross-attention*.

    Returns:
        Shape (B, Ly, H, L, S); row i of each map is what the decoder looked at
        while writing English word i (the last row: ``[eos]``). Rows past a
        sentence's end are padding.
    """
    return _teacher_forced_weights(
        model, [s.french() for s in sentences], [s.english() for s in sentences]
    )


def adjective_alignment(
    model: Translator,
    sentences: list[Sentence],
    layer: int = -1,
    head: int | None = None,
) -> float:
    """Share of English adjectives that attend most to their French adjective.

    Explained in the chapter *cross-attention*. For every adjective of every
    sentence (``the [black] cat`` / ``le chat [noir]``), the row of the
    cross-attention map that writes the English adjective is taken from
    ``layer``, for one ``head`` or averaged over the heads (``head=None``); the
    adjective counts as aligned if its largest weight falls on the French
    adjective, which comes after the noun, not at the English adjective's place.

    Returns:
        A share in [0, 1].
    """
    if not sentences:
        raise ValueError("sentences must hold at least one sentence, got none")
    layers, heads = len(model.decoder), model.decoder[0].cross_attention.num_heads
    if not -layers <= layer < layers:
        raise ValueError(f"layer must be in {-layers}..{layers - 1}, got {layer}")
    if head is not None and not 0 <= head < heads:
        raise ValueError(f"head must be None or in 0..{heads - 1}, got {head}")
    weights = cross_weights(model, sentences)[:, layer]  # (B, H, L, S)
    maps = weights.mean(dim=1) if head is None else weights[:, head]  # (B, L, S)
    return _aligned_share(maps, sentences)


def _aligned_share(maps: Tensor, sentences: list[Sentence]) -> float:
    """The share of :func:`adjective_alignment`, from maps (B, L, S)."""
    hits = [
        int(maps[b, english].argmax()) == french
        for b, sentence in enumerate(sentences)
        for english, french in sentence.adjectives()
    ]
    return sum(hits) / len(hits)


@dataclass
class TrainResult:
    """What :func:`train` returns, for the chapter *cross-attention*.

    Attributes:
        model: the trained :class:`Translator` (in eval mode).
        accuracy: the share of held-out sentences whose greedy translation is
            exactly right, word for word.
        train_accuracy: the same on as many training sentences.
        history: the training loss at each step.
        seconds: wall-clock training time.
        cpu_seconds: CPU time of the training (process time).
        heldout: the held-out sentences.
        translations: the model's greedy translation of each held-out sentence.
        score: ``"dot"`` or ``"additive"``.
        num_parameters: trainable parameters of the model.
        adjective_alignment: the share of held-out English adjectives whose
            largest cross-attention weight (last layer, mean of the heads) is on
            their French adjective (:func:`adjective_alignment`).
        adjective_alignment_per_head: the same share for each head of the
            last layer, (H,).
    """

    model: Translator
    accuracy: float
    train_accuracy: float
    history: list[float]
    seconds: float
    cpu_seconds: float
    heldout: list[Sentence] = field(repr=False)
    translations: list[list[str]] = field(repr=False)
    score: str = "dot"
    num_parameters: int = 0
    adjective_alignment: float = 0.0
    adjective_alignment_per_head: list[float] = field(default_factory=list)


def exact_match(model: Translator, sentences: list[Sentence]) -> tuple[float, list]:
    """Share of sentences translated exactly right by greedy decoding.

    Explained in the chapter *cross-attention*: a sentence counts only if every
    word is right and in the right place.

    Returns:
        ``(share, translations)``: a share in [0, 1] and the greedy translations.
    """
    translations, _ = greedy_decode(model, [s.french() for s in sentences])
    right = [t == s.english() for t, s in zip(translations, sentences, strict=True)]
    return sum(right) / len(right), translations


def train(
    seed: int = 0,
    score: str = "dot",
    steps: int = 200,
    batch_size: int = 64,
    lr: float = 3e-3,
    embed_dim: int = 64,
    num_heads: int = 4,
    num_layers: int = 1,
    ff_dim: int = 128,
    split_seed: int = 0,
    n_heldout: int = 1000,
) -> TrainResult:
    """Train a :class:`Translator` with teacher forcing, deterministically.

    Explained in the chapter *cross-attention*. Each step draws a batch of
    training sentences (seeded), feeds the decoder the right English words
    shifted by one (teacher forcing) and minimises the cross-entropy of the
    next word. Adam with a learning rate that decays linearly to zero.

    Args:
        seed: seeds the weights and the batches.
        score: the cross-attention score, ``"dot"`` or ``"additive"``.
        steps: optimisation steps.
        batch_size: sentences per step.
        lr: the peak learning rate.
        embed_dim, num_heads, num_layers, ff_dim: the model's size.
        split_seed: seeds the held-out pairs (:func:`heldout_pairs`).
        n_heldout: held-out sentences to measure.

    Returns:
        A :class:`TrainResult`.
    """
    train_phrases, _ = split_phrases(split_seed)
    heldout = heldout_sentences(split_seed, n_heldout)
    torch.manual_seed(seed)
    model = Translator(embed_dim, num_heads, num_layers, ff_dim, score)
    rng = random.Random(seed)
    # foreach: every tensor in one call, the same numbers, less Python per step
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, weight_decay=0.01, foreach=True
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer,
        max_lr=lr,
        total_steps=steps,
        pct_start=0.1,
        anneal_strategy="linear",
    )
    loss_fn = nn.CrossEntropyLoss(ignore_index=TARGET_ID[PAD])
    history: list[float] = []
    start, cpu_start = time.perf_counter(), time.process_time()
    model.train()
    with torch.enable_grad():
        for _ in range(steps):
            batch = [random_sentence(rng, train_phrases) for _ in range(batch_size)]
            source, keep = encode_source([s.french() for s in batch])
            target_in, target_out = encode_target([s.english() for s in batch])
            logits, _ = model(source, keep, target_in)  # (B, L, V)
            loss = loss_fn(logits.flatten(0, 1), target_out.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            history.append(float(loss.detach()))
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    model.eval()
    accuracy, translations = exact_match(model, heldout)
    seen_rng = random.Random(split_seed + 1)
    seen = [random_sentence(seen_rng, train_phrases) for _ in heldout]
    weights = cross_weights(model, heldout)[:, -1]  # (B, H, L, S): the last layer
    return TrainResult(
        model=model,
        accuracy=accuracy,
        train_accuracy=exact_match(model, seen)[0],
        history=history,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        heldout=heldout,
        translations=translations,
        score=score,
        num_parameters=sum(p.numel() for p in model.parameters()),
        adjective_alignment=_aligned_share(weights.mean(dim=1), heldout),
        adjective_alignment_per_head=[
            _aligned_share(weights[:, h], heldout) for h in range(num_heads)
        ],
    )
