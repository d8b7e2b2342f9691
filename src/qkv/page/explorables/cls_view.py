"""The explorable of the chapter *attention-on-images*: :func:`cls_view`, what the
[CLS] token of a trained Vision Transformer looks at in a digit the reader picks.

Everything is computed in Python at build time, by ``qkv``: the [CLS] row of
every layer and head (:func:`qkv.experiments.vision.cls_attention`), the weight
[CLS] puts on itself, and the model's probabilities; the page only chooses what
to show (the mean of the heads is the one number it computes).

Shapes: B images of Hi x Wi pixels, Ly layers, H heads, M patches, K classes.
"""

from __future__ import annotations

import torch
from torch import Tensor

from qkv.language import N_
from qkv.page.explorables._base import Explorable, nice, plain
from qkv.validate import check_index

__all__ = ["cls_view"]

#: The most digits a page gets: each costs about 1.4 kB of data.
MAX_DIGITS = 60


class ClsView(Explorable):
    """Pick a digit, a layer and a head; see :func:`cls_view`."""

    kind = "qkv-x-cls"
    LABELS = {
        "title": N_("Try it: what [CLS] looks at in a digit"),
        "digit": N_("Held-out digit"),
        "digitValue": N_("{n} of {count}, class {label}"),
        "layer": N_("Layer"),
        "head": N_("Head"),
        "layerN": N_("layer {n}"),
        "headN": N_("head {n}"),
        "mean": N_("mean of the heads"),
        "keys": N_(
            "With the keyboard: Tab moves between the controls; on the "
            "digit slider, ← and → go through the digits, and the keys 0 to 9 jump "
            "to the next digit of that class (from anywhere in the figure); in a "
            "group of buttons, the arrow keys pick the layer or the head."
        ),
        "right": N_("Class {label}: the model reads {pred}, with probability {prob}."),
        "wrong": N_(
            "Class {label}: the model reads {pred}, wrongly, with probability "
            "{prob} (and {trueProb} for {label})."
        ),
        "figure": N_(
            "The digit, each patch coloured by the weight [CLS] gives it, "
            "the weight written in its corner"
        ),
        "scale": N_("weight 0"),
        "scaleEnd": N_("1"),
        "caption": N_("The weights of [CLS] in layer {layer}, one column per head"),
        "corner": N_("token ↓ head →"),
        "patch": N_("patch {n}"),
        "patchTitle": N_("patch {n} (row {row}, column {col}): weight {weight}"),
        "self": N_("[CLS] itself"),
        "meanShort": N_("mean"),
        "fig_title": N_(
            "A held-out digit of class {label}, layer {layer}: "
            "the model reads {pred} ({prob})"
        ),
        "alt": N_(
            "A held-out handwritten digit of class {label}, {hi} by {wi} "
            "pixels, drawn {panels} times, once per head of layer {layer} and once "
            "for their mean, each patch coloured by the attention weight of the "
            "[CLS] token and labelled with it."
        ),
    }
    scripts = ("explorable.js", "cls_view.js")
    build = "qkvClsView"

    def __init__(
        self,
        model,
        images: Tensor,
        labels: Tensor,
        *,
        digit: int = 0,
        layer: int = -1,
        head: int | None = None,
        decimals: int = 3,
        lang: str | None = None,
    ) -> None:
        from qkv.experiments import vision

        super().__init__(lang, decimals)
        if not isinstance(model, vision.VisionTransformer):
            raise ValueError(
                "model must be a qkv.experiments.vision.VisionTransformer, got "
                f"{type(model).__name__}"
            )
        if model.channels != 1:
            raise ValueError(
                f"model must read grey images (1 channel), got {model.channels}"
            )
        size = tuple(model.image_size)
        if (
            not isinstance(images, Tensor)
            or not images.is_floating_point()
            or images.dim() != 3
            or tuple(images.shape[1:]) != size
        ):
            shape = tuple(images.shape) if isinstance(images, Tensor) else None
            raise ValueError(
                f"images must be a floating tensor of shape (B, {size[0]}, "
                f"{size[1]}) (the model's image size), got shape {shape}"
            )
        if not 1 <= len(images) <= MAX_DIGITS:
            raise ValueError(
                f"images must hold 1 to {MAX_DIGITS} digits (they are shipped in "
                f"the page), got shape {tuple(images.shape)}"
            )
        if not torch.isfinite(images).all():
            raise ValueError("images must be finite")
        classes = model.classifier.out_features
        if (
            not isinstance(labels, Tensor)
            or labels.dtype != torch.long
            or tuple(labels.shape) != (len(images),)
            or not ((labels >= 0) & (labels < classes)).all()
        ):
            if isinstance(labels, Tensor):
                seen = f"shape {tuple(labels.shape)}, dtype {labels.dtype}"
                if labels.numel():
                    seen += f", values {labels.min().item()} to {labels.max().item()}"
            else:
                seen = f"{type(labels).__name__}"
            raise ValueError(
                f"labels must be a long tensor of shape ({len(images)},) (one per "
                f"image of images, shape {tuple(images.shape)}) of classes 0 to "
                f"{classes - 1}, got {seen}"
            )
        self.model = model
        self.images = images.detach().cpu().double()
        self.labels = labels.detach().cpu()
        images = images.to(model.classifier.weight.dtype)
        # maps: (B, Ly, H, M), by qkv
        maps = vision.cls_attention(model, images)
        with torch.no_grad():
            logits, weights = model(images)  # (B, K), (B, Ly, H, T, T)
        self.maps = maps.double()
        self.self_weights = weights[..., 0, 0].double()  # (B, Ly, H)
        self.probabilities = torch.softmax(logits.double(), dim=-1)  # (B, K)
        self.predictions = logits.argmax(dim=-1)  # (B,)
        n_layers, n_heads = self.maps.shape[1:3]
        self.digit = check_index("digit", digit, len(images))
        if isinstance(layer, int) and not isinstance(layer, bool) and layer < 0:
            if layer < -n_layers:
                raise ValueError(
                    f"layer must be an int in {-n_layers}..{n_layers - 1} (negative "
                    f"counts from the last), got {layer}"
                )
            layer += n_layers
        self.layer = check_index("layer", layer, n_layers)
        self.head = None if head is None else check_index("head", head, n_heads)
        self.patch_size = model.patch_size

    def _css(self, root_id: str) -> str:
        r = f"#{root_id}"
        return (
            f"{r} fieldset {{ display: inline-flex; flex-wrap: wrap; gap: 0 .8em; "
            "border: 1px solid var(--qkv-border); border-radius: 4px; "
            "margin: 0; padding: .1em .6em .3em; }"
            f"{r} legend {{ font: inherit; font-weight: 600; float: none; "
            "width: auto; margin: 0; padding: 0 .3em; }"
            f"{r} fieldset input {{ margin: 0 .2em 0 0; accent-color: "
            "var(--qkv-accent); }"
            f"{r} figure.qkv-x-digit {{ margin: 0; }}"
            f"{r} .qkv-x-scale {{ width: 8em; height: .8em; }}"
            f"{r} svg text.qkv-x-weight {{ font-size: 13px; "
            "font-variant-numeric: tabular-nums; }"
            f"{r} td.qkv-x-now {{ font-weight: 700; outline: 2px solid "
            "var(--qkv-fg); outline-offset: -2px; }"
        )

    def view(self, digit: int, layer: int, head: int | None) -> Tensor:
        """The weights (M,) the page shows: head ``head`` of layer ``layer``, or
        the mean of the heads (``head=None``), for digit ``digit``."""
        maps = self.maps[digit, layer]  # (H, M)
        return maps.mean(dim=0) if head is None else maps[head]

    @property
    def weights(self) -> Tensor:
        """The weights (M,) the page starts from."""
        return self.view(self.digit, self.layer, self.head)

    def _payload(self) -> dict:
        return {
            **self._common(),
            "images": nice(self.images, 4),
            "classes": self.labels.tolist(),
            "predictions": self.predictions.tolist(),
            "probabilities": nice(self.probabilities),
            "maps": nice(self.maps),
            "self": nice(self.self_weights),
            "patch_size": self.patch_size,
            "digit": self.digit,
            "layer": self.layer,
            "head": self.head,
        }

    def _facts(self) -> dict:
        d = self.digit
        pred = int(self.predictions[d])
        return {
            "label": int(self.labels[d]),
            "pred": pred,
            "prob": self._number(float(self.probabilities[d, pred]), 3),
        }

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.experiments.vision import patch_position, spread_over_pixels
        from qkv.page.plot import WEIGHTS_CMAP

        n_heads = self.maps.shape[2]
        image = self.images[self.digit]  # (Hi, Wi)
        size, p = tuple(image.shape), self.patch_size
        fig, axes = plt.subplots(
            1, n_heads + 1, figsize=(6.8, 2.3), layout="constrained"
        )
        heads = [*range(n_heads), None]
        for ax, head in zip(axes, heads, strict=True):
            weights = self.view(self.digit, self.layer, head)  # (M,)
            shown = ax.imshow(
                spread_over_pixels(weights, size, p).numpy(),
                cmap=WEIGHTS_CMAP,
                vmin=0.0,
                vmax=1.0,
            )
            ax.contour(image.numpy(), levels=[0.4], colors="white", linewidths=1.5)
            for m, w in enumerate(weights.tolist()):
                row, col = patch_position(m, size, p)
                ax.text(
                    col * p - 0.4,
                    row * p - 0.4,
                    self._number(w),
                    ha="left",
                    va="top",
                    fontsize=7,
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5),
                )
            name = (
                self._text("meanShort") if head is None else self._text("headN", n=head)
            )
            ax.set_title(plain(name), fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.colorbar(shown, ax=axes, shrink=0.8)
        fig.suptitle(
            plain(self._text("fig_title", layer=self.layer, **self._facts())),
            fontsize=10,
        )
        return fig

    def _number(self, value: float, decimals: int | None = None) -> str:
        decimals = self.decimals if decimals is None else decimals
        text = f"{value:.{decimals}f}"
        return text.replace(".", ",") if self.lang == "fr" else text

    def static_alt(self) -> str:
        return self._text(
            "alt",
            label=int(self.labels[self.digit]),
            panels=self.maps.shape[2] + 1,
            layer=self.layer,
            hi=self.images.shape[1],
            wi=self.images.shape[2],
        )

    def __repr__(self) -> str:
        n, n_layers, n_heads, m = self.maps.shape
        return (
            f"ClsView({n} digits, {n_layers} layers, {n_heads} heads, {m} patches; "
            f"digit={self.digit}, layer={self.layer}, head={self.head})"
        )


def cls_view(
    model,
    images: Tensor,
    labels: Tensor,
    *,
    digit: int = 0,
    layer: int = -1,
    head: int | None = None,
    decimals: int = 3,
    lang: str | None = None,
) -> ClsView:
    """What the [CLS] token looks at, live: pick one of a set of digits, a layer
    and a head (or the mean of the heads), and see the digit with the weight of
    [CLS] on each patch, and what the model reads, with its probability.

    Explained in the chapter *attention-on-images*. The weights are those of
    :func:`qkv.experiments.vision.cls_attention` on ``model`` and ``images``,
    computed here and shipped in the page (:meth:`ClsView.view` gives the ones
    it shows for a choice).

    Args:
        model: a trained :class:`qkv.experiments.vision.VisionTransformer`.
        images: (B, Hi, Wi), 1 to 60 images of the model's size.
        labels: (B,), their true classes (long).
        digit: the image shown first (and in print).
        layer: the layer shown first; negative counts from the last.
        head: the head shown first, or ``None`` for the mean of the heads.
        decimals: decimals of the weights shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        A :class:`ClsView`; its ``data-weights`` are the (M,) weights shown.

    Raises:
        ValueError: if an argument is not of the kind or shape described.
    """
    return ClsView(
        model,
        images,
        labels,
        digit=digit,
        layer=layer,
        head=head,
        decimals=decimals,
        lang=lang,
    )
