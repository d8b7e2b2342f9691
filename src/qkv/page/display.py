"""Show tensors as LaTeX, so that chapters can glue matrices into their prose.

Used with ``myst_nb.glue`` and the ``{glue:math}`` directive: every matrix the
book prints in an equation is computed, never typed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class LatexMatrix:
    """A tensor of rank 1 or 2 with a LaTeX representation (a ``bmatrix``).

    A vector (rank 1) is shown as a row. ``name`` is put on the left of an equals
    sign, e.g. ``LatexMatrix(x, name=r"\\mathbf{X}")``.
    """

    def __init__(
        self,
        values: torch.Tensor | Sequence,
        name: str | None = None,
        decimals: int = 4,
    ) -> None:
        tensor = torch.as_tensor(values).detach().cpu()
        if tensor.dim() == 1:
            tensor = tensor[None, :]
        if tensor.dim() != 2:
            raise ValueError(
                f"values must be a vector or a matrix, got shape {tuple(tensor.shape)}"
            )
        self.values = tensor
        self.name = name
        self.decimals = decimals

    def latex(self) -> str:
        """The matrix as LaTeX, without math delimiters."""
        rows = [
            " & ".join(f"{float(v):.{self.decimals}f}" for v in row)
            for row in self.values
        ]
        body = r" \\ ".join(rows)
        matrix = rf"\begin{{bmatrix}} {body} \end{{bmatrix}}"
        return f"{self.name} = {matrix}" if self.name else matrix

    def _repr_latex_(self) -> str:
        return f"$$ {self.latex()} $$"

    def __repr__(self) -> str:
        return f"LatexMatrix(shape={tuple(self.values.shape)}, name={self.name!r})"


class Latex:
    """Any LaTeX expression built by code (e.g. a worked sum with its numbers)."""

    def __init__(self, expression: str) -> None:
        self.expression = expression

    def _repr_latex_(self) -> str:
        return f"$$ {self.expression} $$"

    def __repr__(self) -> str:
        return f"Latex({self.expression!r})"
