"""A small horizontal bar chart (Rich text) for comparing backends' times on one layer."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from rich.text import Text

_EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar(value: float, maximum: float, width: int) -> str:
    """A bar of ``value/maximum * width`` cells with eighth-cell resolution."""
    if maximum <= 0 or value <= 0 or width <= 0:
        return ""
    eighths = round(min(value / maximum, 1.0) * width * 8)
    full, part = divmod(eighths, 8)
    out = "█" * full + (_EIGHTHS[part] if part else "")
    return out or "▏"


def bar_chart(items: Sequence[tuple[str, Optional[float], str]], *, width: int = 40,
              fmt: Callable[[float], str] = str, title: str = "") -> Text:
    """``items``: (label, value or None, note); ``fmt`` writes a value with its unit.
    Bars scale to the largest value."""
    text = Text()
    if title:
        text.append(title + "\n", style="bold")
    values = [v for _, v, _ in items if v is not None and v > 0]
    maximum = max(values) if values else 0.0
    label_w = max([len(label) for label, _, _ in items] + [4])
    for label, value, note in items:
        text.append(f"{label:<{label_w}} ", style="bold")
        if value is None:
            text.append("—".ljust(width), style="dim")
            text.append(f"  {note}\n", style="dim")
            continue
        b = bar(value, maximum, width)
        fastest = value == min(values) if values else False
        text.append(b.ljust(width), style="green" if fastest else "cyan")
        text.append(f" {fmt(value)}")
        if note:
            text.append(f"  {note}", style="dim")
        text.append("\n")
    return text
