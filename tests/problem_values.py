"""Small problem values the tests build (a module, not the conftest: conftests are not meant
to be imported, and tests/app/ has one of its own)."""

from __future__ import annotations

from typing import Any

from miotui.problems import ConvProblem


def make_conv(direction: str = "fwd", dtype: str = "fp32", n: int = 2, c: int = 4, k: int = 6, hw: int = 8,
              **kw: Any) -> ConvProblem:
    """A 3x3, pad 1, stride 1 convolution on hw x hw images; ``kw`` overrides any field."""
    fields: dict[str, Any] = dict(in_spatial=(hw, hw), filter=(3, 3), pads=(1, 1), strides=(1, 1),
                                  dilations=(1, 1))
    fields.update(kw)
    return ConvProblem(direction, dtype, n, c, k, **fields)
