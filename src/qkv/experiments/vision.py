"""Attention on images: patches, a [CLS] token and a tiny Vision Transformer.

Explained in the chapter *attention-on-images*. Following Dosovitskiy et al. (2021),
"An Image is Worth 16x16 Words", an image is cut into square patches, each patch is
flattened and mapped to a vector by one linear layer, and the sequence of patch
vectors goes through the same Transformer blocks as a sentence would. A learned
[CLS] vector is put in front of the patches; the classifier reads its output.

Shape legend (that of :mod:`qkv.attention`, plus the image's):

    B    batch size (images)
    C    channels (1 for a grey image)
    Hi   image height, Wi image width, in pixels
    p    patch side, in pixels
    N    number of patches, (Hi / p) (Wi / p)
    P    numbers per patch, C p p
    T    tokens: N + 1 with the [CLS] token first
    D    model dimension, H heads, Ly layers

Patches are numbered row-major: patch n covers rows ``p * (n // (Wi / p))`` to
``p * (n // (Wi / p)) + p - 1`` and the columns likewise with ``n % (Wi / p)``;
inside a patch the numbers are ordered channel, then row, then column.

The data are scikit-learn's handwritten digits (8x8 grey images, 1797 of them,
shipped with scikit-learn: no download), split once, stratified, into a training
set and a held-out set.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention
from qkv.transformer import TransformerBlock, sinusoidal_positions
from qkv.validate import check_int

__all__ = [
    "DigitsData",
    "TrainResult",
    "ViTBlock",
    "VisionTransformer",
    "cls_attention",
    "example_indices",
    "load_digits",
    "output_projection_parameters",
    "patch_grid",
    "patch_position",
    "patchify",
    "positions_2d",
    "spread_over_pixels",
    "train",
    "unpatchify",
]


def patch_grid(image_size: tuple[int, int], patch_size: int) -> tuple[int, int]:
    """The number of patch rows and patch columns of an image.

    Explained in the chapter *attention-on-images*.

    Args:
        image_size: ``(Hi, Wi)``, the image's height and width in pixels.
        patch_size: p, the side of a square patch in pixels.

    Returns:
        ``(Hi // p, Wi // p)``; their product is N.

    Raises:
        ValueError: if ``patch_size`` is not an int >= 1 or does not divide both
            sides of the image.
    """
    check_int("patch_size", patch_size, minimum=1)
    if (
        not isinstance(image_size, (tuple, list, torch.Size))
        or len(image_size) != 2
        or isinstance(image_size[0], bool)
        or isinstance(image_size[1], bool)
        or not all(isinstance(side, int) and side >= 1 for side in image_size)
    ):
        raise ValueError(
            f"image_size must be (height, width), two ints >= 1, got {image_size!r}"
        )
    height, width = image_size
    if height % patch_size or width % patch_size:
        raise ValueError(
            f"patch_size={patch_size} must divide the image size "
            f"(height, width) = {(height, width)}"
        )
    return height // patch_size, width // patch_size


def patchify(images: Tensor, patch_size: int) -> Tensor:
    """Cut images into square patches and flatten each patch.

    Explained in the chapter *attention-on-images*. Patches are numbered
    row-major (left to right, then top to bottom); each patch is flattened in
    the order channel, row, column.

    Args:
        images: shape (B, Hi, Wi) for grey images or (B, C, Hi, Wi).
        patch_size: p, the side of a patch in pixels; must divide Hi and Wi.

    Returns:
        Patches of shape (B, N, P) with N = (Hi / p) (Wi / p) and P = C p p
        (C = 1 for (B, Hi, Wi) input).

    Raises:
        ValueError: if ``images`` is not a tensor of rank 3 or 4, or
            ``patch_size`` is not an int >= 1 dividing Hi and Wi.
    """
    if not isinstance(images, Tensor) or images.dim() not in (3, 4):
        shape = tuple(images.shape) if isinstance(images, Tensor) else type(images)
        raise ValueError(
            f"images must be a tensor of shape (B, Hi, Wi) or (B, C, Hi, Wi), "
            f"got {shape}"
        )
    check_int("patch_size", patch_size, minimum=1)
    x = images if images.dim() == 4 else images[:, None]  # (B, C, Hi, Wi)
    batch, channels, height, width = x.shape
    if height % patch_size or width % patch_size:
        raise ValueError(
            f"patch_size={patch_size} must divide the image size "
            f"(height, width) = {(height, width)} of images {tuple(images.shape)}"
        )
    rows, cols = height // patch_size, width // patch_size
    p = patch_size
    x = x.reshape(batch, channels, rows, p, cols, p)  # (B, C, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, p, p)
    return x.reshape(batch, rows * cols, channels * p * p)  # (B, N, P)


def unpatchify(
    patches: Tensor,
    image_size: tuple[int, int],
    patch_size: int,
    channels: int | None = None,
) -> Tensor:
    """Put patches back together: the inverse of :func:`patchify`.

    Explained in the chapter *attention-on-images*.

    Args:
        patches: shape (B, N, P).
        image_size: ``(Hi, Wi)``.
        patch_size: p.
        channels: C, to get (B, C, Hi, Wi) back; ``None`` (the default) for
            grey images given as (B, Hi, Wi), with P = p p.

    Returns:
        Images of shape (B, Hi, Wi), or (B, C, Hi, Wi) when ``channels`` is given.

    Raises:
        ValueError: if the shape of ``patches`` does not match the image size,
            the patch size and the channels.
    """
    rows, cols = patch_grid(image_size, patch_size)
    n_channels = 1 if channels is None else channels
    check_int("channels", n_channels, minimum=1)
    p = patch_size
    expected = (rows * cols, n_channels * p * p)
    if (
        not isinstance(patches, Tensor)
        or patches.dim() != 3
        or tuple(patches.shape[1:]) != expected
    ):
        shape = tuple(patches.shape) if isinstance(patches, Tensor) else type(patches)
        raise ValueError(
            f"patches must have shape (B, N, P) = (B, {expected[0]}, {expected[1]}) "
            f"for image_size={tuple(image_size)}, patch_size={p} and "
            f"channels={channels}, got {shape}"
        )
    batch = patches.shape[0]
    x = patches.reshape(batch, rows, cols, n_channels, p, p)  # (B, rows, cols, C, p, p)
    x = x.permute(0, 3, 1, 4, 2, 5)  # (B, C, rows, p, cols, p)
    x = x.reshape(batch, n_channels, rows * p, cols * p)  # (B, C, Hi, Wi)
    return x if channels is not None else x[:, 0]


def patch_position(
    index: int, image_size: tuple[int, int], patch_size: int
) -> tuple[int, int]:
    """Where patch ``index`` sits in the grid of patches: ``(row, column)``.

    Explained in the chapter *attention-on-images*. Its top-left pixel is
    ``(row * p, column * p)``.

    Raises:
        ValueError: if ``index`` is not in ``0 .. N - 1``.
    """
    rows, cols = patch_grid(image_size, patch_size)
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"index must be an int, got {index!r}")
    if not 0 <= index < rows * cols:
        raise ValueError(
            f"index must be in 0..{rows * cols - 1} (N = {rows * cols} patches of "
            f"{patch_size}x{patch_size} in {tuple(image_size)}), got {index}"
        )
    return divmod(index, cols)


def spread_over_pixels(
    values: Tensor, image_size: tuple[int, int], patch_size: int
) -> Tensor:
    """Give every pixel the value of its patch, to draw per-patch numbers on an image.

    Explained in the chapter *attention-on-images*: the [CLS] token's attention
    over the N patches becomes an (Hi, Wi) picture laid over the digit.

    Args:
        values: shape (..., N), one number per patch, row-major.
        image_size: ``(Hi, Wi)``.
        patch_size: p.

    Returns:
        Shape (..., Hi, Wi).
    """
    rows, cols = patch_grid(image_size, patch_size)
    if not isinstance(values, Tensor) or values.dim() < 1:
        raise ValueError(f"values must be a tensor of shape (..., N), got {values!r}")
    if values.shape[-1] != rows * cols:
        raise ValueError(
            f"the last dim of values must be N = {rows * cols} patches "
            f"({rows}x{cols} grid), got values {tuple(values.shape)}"
        )
    grid = values.reshape(*values.shape[:-1], rows, cols)  # (..., rows, cols)
    grid = grid.repeat_interleave(patch_size, dim=-2)  # (..., Hi, cols)
    return grid.repeat_interleave(patch_size, dim=-1)  # (..., Hi, Wi)


def positions_2d(rows: int, cols: int, dim: int) -> Tensor:
    """Two-dimensional sinusoidal position codes for a grid of patches.

    Explained in the chapter *attention-on-images*. The first half of each code
    is the sinusoidal code (Vaswani et al. 2017) of the patch's row, the second
    half that of its column, so that two patches in the same row share half of
    their code, and the model can tell "above" from "beside".

    Args:
        rows, cols: the grid of patches.
        dim: D, divisible by 4 (a sin/cos pair for each half).

    Returns:
        Shape (rows * cols, D), row-major like the patches.
    """
    check_int("rows", rows, minimum=1)
    check_int("cols", cols, minimum=1)
    check_int("dim", dim, minimum=1)
    if dim % 4:
        raise ValueError(f"dim must be divisible by 4 (rows and columns), got {dim}")
    row_codes = sinusoidal_positions(rows, dim // 2)  # (rows, D/2)
    col_codes = sinusoidal_positions(cols, dim // 2)  # (cols, D/2)
    return torch.cat(
        [
            row_codes[:, None, :].expand(rows, cols, dim // 2),
            col_codes[None, :, :].expand(rows, cols, dim // 2),
        ],
        dim=-1,
    ).reshape(rows * cols, dim)  # (N, D)


class ViTBlock(TransformerBlock):
    """A :class:`~qkv.transformer.TransformerBlock` that also returns its weights.

    Explained in the chapter *attention-on-images*. Same parameters and same
    output as the block of the chapter *transformer-block* (post-norm); its
    ``forward`` returns the attention weights too, so that the chapter can draw
    what the [CLS] token looks at in every layer.
    """

    def forward(  # type: ignore[override]
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> tuple[Tensor, Tensor]:
        """x: (B, T, D) -> ``(output, weights)``: (B, T, D) and (B, H, T, T)."""
        context, weights = self.attention(
            x, attn_mask=attn_mask, is_causal=is_causal
        )  # (B, T, D), (B, H, T, T)
        x = self.norm1(x + context)
        return self.norm2(x + self.feed_forward(x)), weights


class VisionTransformer(nn.Module):
    """A tiny Vision Transformer (Dosovitskiy et al. 2021) for small grey images.

    Explained in the chapter *attention-on-images*. Patches -> one linear layer
    (the patch embedding) -> plus 2-D position codes -> a learned [CLS] vector in
    front -> ``num_layers`` :class:`ViTBlock` -> a linear classifier on the
    [CLS] output.

    The position codes are fixed 2-D sinusoidal codes (:func:`positions_2d`)
    rather than learned ones: they add no parameter to learn from a few
    training images, reuse the code of the chapter *transformer-block*, exist
    for every grid of patches (patch sizes 1, 2 and 4 alike), and say which row
    and which column a patch is in. The blocks are post-norm, as in the chapter
    *transformer-block* (Dosovitskiy et al. normalise before each sub-layer
    instead).

    Args:
        image_size: ``(Hi, Wi)``.
        patch_size: p.
        channels: C.
        num_classes: the number of classes.
        embed_dim: D, divisible by ``num_heads`` and by 4.
        num_heads: H.
        num_layers: Ly.
        ff_dim: F, the hidden size of each feed-forward network.
    """

    def __init__(
        self,
        image_size: tuple[int, int] = (8, 8),
        patch_size: int = 2,
        channels: int = 1,
        num_classes: int = 10,
        embed_dim: int = 32,
        num_heads: int = 4,
        num_layers: int = 3,
        ff_dim: int = 64,
    ) -> None:
        super().__init__()
        check_int("channels", channels, minimum=1)
        check_int("num_classes", num_classes, minimum=1)
        check_int("num_layers", num_layers, minimum=1)
        check_int("embed_dim", embed_dim, minimum=1)
        if embed_dim % 4:
            raise ValueError(
                f"embed_dim must be divisible by 4 (2-D sin/cos position codes), "
                f"got {embed_dim}"
            )
        rows, cols = patch_grid(image_size, patch_size)
        self.image_size = tuple(image_size)
        self.patch_size = patch_size
        self.channels = channels
        self.patch_embedding = nn.Linear(channels * patch_size**2, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.register_buffer("positions", positions_2d(rows, cols, embed_dim))
        self.blocks = nn.ModuleList(
            ViTBlock(embed_dim, num_heads, ff_dim) for _ in range(num_layers)
        )
        self.classifier = nn.Linear(embed_dim, num_classes)

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor]:
        """Classify images, returning the attention weights of every layer.

        Args:
            images: shape (B, Hi, Wi), or (B, C, Hi, Wi).

        Returns:
            ``(logits, weights)``: logits (B, classes) and weights
            (B, Ly, H, T, T), T = N + 1, token 0 being [CLS].
        """
        if not isinstance(images, Tensor):
            raise ValueError(
                f"images must be a torch.Tensor, got {type(images).__name__}"
            )
        expected = (self.channels, *self.image_size)
        x = images[:, None] if images.dim() == 3 and self.channels == 1 else images
        if x.dim() != 4 or tuple(x.shape[1:]) != expected:
            grey = (
                f" or (B, {expected[1]}, {expected[2]})" if self.channels == 1 else ""
            )
            raise ValueError(
                f"images must have shape (B, {', '.join(map(str, expected))}){grey}, "
                f"got {tuple(images.shape)}"
            )
        if not x.is_floating_point():
            raise ValueError(
                f"images must be a floating tensor (pixel values as floats, e.g. "
                f"images.float() / 255), got dtype {images.dtype} of shape "
                f"{tuple(images.shape)}"
            )
        patches = patchify(x, self.patch_size)  # (B, N, P)
        x = self.patch_embedding(patches) + self.positions  # (B, N, D)
        cls = self.cls_token.expand(x.shape[0], 1, x.shape[-1])  # (B, 1, D)
        x = torch.cat([cls, x], dim=1)  # (B, T, D)
        all_weights = []
        for block in self.blocks:
            x, weights = block(x)  # (B, T, D), (B, H, T, T)
            all_weights.append(weights)
        logits = self.classifier(x[:, 0])  # (B, classes), read at [CLS]
        return logits, torch.stack(all_weights, dim=1)  # (B, Ly, H, T, T)


def cls_attention(model: VisionTransformer, images: Tensor) -> Tensor:
    """What the [CLS] token looks at: its attention over the patches.

    Explained in the chapter *attention-on-images*.

    Args:
        model: a :class:`VisionTransformer`.
        images: shape (B, Hi, Wi) or (B, C, Hi, Wi).

    Returns:
        Shape (B, Ly, H, N): for each layer and head, the weight of [CLS] on each
        patch (row-major). Each row sums to 1 minus the weight [CLS] puts on
        itself.
    """
    with torch.no_grad():
        _, weights = model(images)  # (B, Ly, H, T, T)
    return weights[..., 0, 1:]  # (B, Ly, H, N)


@dataclass
class DigitsData:
    """scikit-learn's 8x8 digits, split once into training and held-out images.

    Explained in the chapter *attention-on-images*; made by :func:`load_digits`.

    Attributes:
        train_images: (B_train, 8, 8), pixel values scaled to [0, 1].
        train_labels: (B_train,).
        test_images: (B_test, 8, 8).
        test_labels: (B_test,).
    """

    train_images: Tensor
    train_labels: Tensor
    test_images: Tensor
    test_labels: Tensor


def load_digits(test_size: float = 0.25, split_seed: int = 0) -> DigitsData:
    """Load scikit-learn's handwritten digits and split them, stratified.

    Explained in the chapter *attention-on-images*. The split is the same for
    every training seed (``split_seed`` fixes it), so that seeds compare models,
    not test sets. Each class is split in the same proportion.

    Args:
        test_size: the share of images held out, in (0, 1).
        split_seed: seeds the split.
    """
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1), got {test_size!r}")
    digits = sklearn_digits()
    images = torch.tensor(digits.images, dtype=torch.float32) / 16.0  # (1797, 8, 8)
    labels = torch.tensor(digits.target, dtype=torch.long)  # (1797,)
    train_idx, test_idx = train_test_split(
        torch.arange(len(labels)).numpy(),
        test_size=test_size,
        random_state=split_seed,
        stratify=labels.numpy(),
    )
    train_idx, test_idx = torch.as_tensor(train_idx), torch.as_tensor(test_idx)
    return DigitsData(
        images[train_idx], labels[train_idx], images[test_idx], labels[test_idx]
    )


def example_indices(labels: Tensor) -> Tensor:
    """The index of the first image of each class.

    Explained in the chapter *attention-on-images*, whose examples they are.

    Args:
        labels: shape (B,), classes 0 .. K - 1, each present.

    Returns:
        Shape (K,).
    """
    classes = int(labels.max()) + 1
    found = [torch.nonzero(labels == c)[:1, 0] for c in range(classes)]
    if any(len(f) == 0 for f in found):
        missing = [c for c, f in enumerate(found) if len(f) == 0]
        raise ValueError(f"labels has no image of class {missing}")
    return torch.cat(found)  # (K,)


def output_projection_parameters(embed_dim: int = 384, num_heads: int = 6) -> dict:
    """Parameters of the output projection W_o of a multi-head attention layer.

    Explained in the chapter *attention-on-images*, for the 384-wide, 6-head
    model of a small ViT: the heads' outputs, put side by side, are mixed by one
    ``nn.Linear(D, D)``. Counted from the layers themselves, never typed.

    Args:
        embed_dim: D.
        num_heads: H; D must be divisible by H.

    Returns:
        ``{"with_bias": D * D + D, "without_bias": D * D, "head_dim": D / H}``,
        each counted from a :class:`~qkv.attention.MultiHeadAttention`.
    """
    check_int("embed_dim", embed_dim, minimum=1)
    check_int("num_heads", num_heads, minimum=1)
    if embed_dim % num_heads:
        raise ValueError(
            f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}"
        )
    counts = {}
    for bias, key in ((True, "with_bias"), (False, "without_bias")):
        layer = MultiHeadAttention(embed_dim, num_heads, bias=bias)
        counts[key] = sum(p.numel() for p in layer.W_o.parameters())
    counts["head_dim"] = layer.head_dim
    return counts


@dataclass
class TrainResult:
    """What :func:`train` returns, for the chapter *attention-on-images*.

    Attributes:
        model: the trained :class:`VisionTransformer` (in eval mode).
        accuracy: the share of held-out images classified correctly.
        per_class_accuracy: the same for the held-out images of each digit, (10,).
        history: the mean training loss of each epoch.
        seconds: wall-clock training time.
        cpu_seconds: CPU time of the training (process time), the honest
            measure on a shared machine.
        data: the images and the split used.
        predictions: the model's class for each held-out image, (B_test,).
        examples: indices into the held-out images of the chapter's examples,
            the first image of each digit, (10,).
        cls_maps: the [CLS] token's attention over the patches for those
            examples, (10, Ly, H, N).
        patch_size: p.
        num_tokens: T = N + 1, the sequence length the model attends over.
        num_parameters: trainable parameters of the model.
    """

    model: VisionTransformer
    accuracy: float
    per_class_accuracy: Tensor
    history: list[float]
    seconds: float
    cpu_seconds: float
    data: DigitsData = field(repr=False)
    predictions: Tensor = field(repr=False)
    examples: Tensor = field(repr=False)
    cls_maps: Tensor = field(repr=False)
    patch_size: int = 2
    num_tokens: int = 17
    num_parameters: int = 0


def train(
    seed: int = 0,
    patch_size: int = 2,
    epochs: int = 30,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 0.05,
    embed_dim: int = 32,
    num_heads: int = 4,
    num_layers: int = 3,
    ff_dim: int = 64,
    data: DigitsData | None = None,
) -> TrainResult:
    """Train a :class:`VisionTransformer` on the digits, deterministically.

    Explained in the chapter *attention-on-images*. Minibatches in an order
    drawn by a generator seeded with ``seed``; AdamW with a learning rate that
    rises for one epoch, then falls linearly to zero. Run it after
    ``torch.set_num_threads(1)`` for timings that compare.

    Args:
        seed: seeds the weights and the order of the minibatches.
        patch_size: p: 1, 2, 4 or 8 for the 8x8 digits.
        epochs: passes over the training images.
        batch_size: images per step.
        lr: the peak learning rate.
        weight_decay: AdamW's decoupled weight decay.
        embed_dim, num_heads, num_layers, ff_dim: the model's size.
        data: the split to use (default :func:`load_digits`).

    Returns:
        A :class:`TrainResult`.
    """
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        check_int(name, value, minimum=1)
    data = load_digits() if data is None else data
    torch.manual_seed(seed)
    model = VisionTransformer(
        image_size=tuple(data.train_images.shape[-2:]),
        patch_size=patch_size,
        embed_dim=embed_dim,
        num_heads=num_heads,
        num_layers=num_layers,
        ff_dim=ff_dim,
    )
    generator = torch.Generator().manual_seed(seed)
    n_train = len(data.train_labels)
    steps_per_epoch = -(-n_train // batch_size)
    # foreach: every tensor in one call, the same numbers, less Python per step
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer,
        max_lr=lr,
        total_steps=epochs * steps_per_epoch,
        pct_start=1 / epochs if epochs > 1 else 0.5,
        anneal_strategy="linear",
    )
    loss_fn = nn.CrossEntropyLoss()
    history: list[float] = []
    start, cpu_start = time.perf_counter(), time.process_time()
    model.train()
    with torch.enable_grad():  # even if the caller switched gradients off
        for _ in range(epochs):
            order = torch.randperm(n_train, generator=generator)
            total = 0.0
            for first in range(0, n_train, batch_size):
                batch = order[first : first + batch_size]
                logits, _ = model(data.train_images[batch])  # (b, 10)
                loss = loss_fn(logits, data.train_labels[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                total += float(loss.detach()) * len(batch)
            history.append(total / n_train)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    model.eval()
    with torch.no_grad():
        logits, _ = model(data.test_images)  # (B_test, 10)
    predictions = logits.argmax(dim=-1)  # (B_test,)
    correct = (predictions == data.test_labels).float()
    per_class = torch.stack(
        [correct[data.test_labels == c].mean() for c in range(10)]
    )  # (10,)
    examples = example_indices(data.test_labels)  # (10,)
    return TrainResult(
        model=model,
        accuracy=float(correct.mean()),
        per_class_accuracy=per_class,
        history=history,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        data=data,
        predictions=predictions,
        examples=examples,
        cls_maps=cls_attention(model, data.test_images[examples]),
        patch_size=patch_size,
        num_tokens=model.positions.shape[0] + 1,
        num_parameters=sum(p.numel() for p in model.parameters()),
    )
