"""Small modal dialogs: pick a sort column, choose how to run a layer, export layers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, RadioButton, RadioSet, Static
from textual.widgets.option_list import Option

from miotui.safe_text import visible
from miotui.views.layer_model import COLUMNS


class ChoiceSet(RadioSet):
    """A RadioSet where the highlighted option is the chosen one, and enter means "this
    one, go".

    Why: in a dialog the user moves to an option with the arrows and then either presses
    enter or tabs to another field and presses enter there.  A plain RadioSet only
    highlights on the arrows (space selects), so the second way ran the option that was
    selected when the dialog opened (``R``, down to "all", tab, enter: numpy ran).
    """

    BINDINGS = [Binding("enter", "choose", "Choose", show=False)]

    def action_next_button(self) -> None:
        super().action_next_button()
        self._press_highlighted()

    def action_previous_button(self) -> None:
        super().action_previous_button()
        self._press_highlighted()

    def _press_highlighted(self) -> None:
        index = self._selected   # the highlighted option (textual 8.2.8's RadioSet keeps it here)
        if index is None or not self.is_mounted:
            return
        buttons = list(self.query(RadioButton))
        if 0 <= index < len(buttons) and not buttons[index].disabled:
            buttons[index].value = True

    @property
    def chosen(self) -> Optional[str]:
        button = self.pressed_button
        return button.name if button is not None else None

    class Chosen(Message):
        def __init__(self, choice_set: "ChoiceSet", name: str) -> None:
            super().__init__()
            self.choice_set = choice_set
            self.name = name

        @property
        def control(self) -> "ChoiceSet":
            return self.choice_set

    def action_choose(self) -> None:
        index = self._selected   # the highlighted option (textual 8.2.8's RadioSet keeps it here)
        if index is None:
            button = self.pressed_button
        else:
            button = list(self.query(RadioButton))[index]
            if not button.disabled:
                button.value = True
        if button is not None and not button.disabled and button.name:
            self.post_message(self.Chosen(self, button.name))


# ---------------------------------------------------------------------- sort


class SortScreen(ModalScreen[Optional[str]]):
    """Pick the column to sort by (the same column again flips the order)."""

    BINDINGS = [Binding("escape", "dismiss_none", "Close", id="sort.close")]

    def __init__(self, current: str, reverse: bool) -> None:
        super().__init__(classes="dialog-screen")
        self.current = current
        self.reverse = reverse

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Sort by (enter; the current column again flips the order)", classes="dialog-title")
            options = []
            for col in COLUMNS:
                mark = (" ▼" if self.reverse else " ▲") if col.key == self.current else ""
                text = f"{col.title}{mark}" + (f"  — {col.help}" if col.help else "")
                options.append(Option(text, id=col.key))
            ol = OptionList(*options, id="sort-options")
            yield ol

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        keys = [c.key for c in COLUMNS]
        ol.highlighted = keys.index(self.current) if self.current in keys else 0
        ol.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


# ---------------------------------------------------------------------- run chooser

CHOICES = (
    ("auto", "reference (auto: numba where its kernels apply, else numpy)"),
    ("numpy", "numpy reference"),
    ("numba", "numba reference"),
    ("torch", "PyTorch"),
    ("miopen-driver", "MIOpenDriver (the real binary)"),
    ("all", "all of them, side by side (n/a where one does not apply)"),
)


@dataclass(frozen=True)
class RunChoice:
    backend: str
    iters: int
    batch: Optional[int]


class RunChooserScreen(ModalScreen[Optional[RunChoice]]):
    """Choose backend(s), iterations and a batch override for one layer.

    The highlighted backend is the one that runs, whichever field has focus when enter
    is pressed.  Laid out to fit an 80x24 terminal."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="run_chooser.cancel")]

    class Availability(Message):
        def __init__(self, avail: dict[str, Optional[str]]) -> None:
            super().__init__()
            self.avail = avail

    def __init__(self, title: str, n: int, *, iters: int = 10) -> None:
        super().__init__(classes="dialog-screen")
        self.layer_title = title
        self.n = n
        self.iters = iters

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="run-dialog"):
            yield Label(Text(f"Run {visible(self.layer_title)}"), classes="dialog-title")
            yield Static("arrows choose (the highlighted one runs); enter runs from any field", classes="dim")
            with ChoiceSet(id="backend"):
                for i, (key, text) in enumerate(CHOICES):
                    yield RadioButton(text, value=i == 0, id=f"backend-{key}", name=key)
            yield Static("checking which backends are available…", id="availability", classes="dim")
            with Horizontal(classes="field-row"):
                yield Label("iterations", classes="field-label")
                yield Input(str(self.iters), id="iters", type="integer", restrict=r"[0-9]*")
                yield Label(f"batch (log {self.n})", classes="field-label")
                yield Input("", placeholder=f"{self.n}", id="batch", type="integer", restrict=r"[0-9]*")
                yield Button("Run", variant="primary", id="run")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(RadioSet).focus()
        self._check()

    @work(thread=True, group="availability", exit_on_error=False)
    def _check(self) -> None:
        try:
            from miotui.execute.backends import available_backends
            avail = available_backends()
        except Exception as e:  # the chooser must open even if a backend module is broken
            avail = {"numpy": f"backends unavailable: {e}"}
        self.post_message(self.Availability(avail))

    @on(Availability)
    def _show_availability(self, event: Availability) -> None:
        avail = event.avail
        missing = []
        for key, why in avail.items():
            try:
                button = self.query_one(f"#backend-{key}", RadioButton)
            except Exception:
                continue
            if why:
                button.disabled = True
                missing.append(f"{key}: {why}")
        choices = self.query_one(ChoiceSet)
        pressed = choices.pressed_button
        if pressed is not None and pressed.disabled:
            self.query_one("#backend-auto", RadioButton).value = True
        text = Text("; ".join(visible(m) for m in missing) if missing else "every backend is available",
                    no_wrap=True, overflow="ellipsis")
        self.query_one("#availability", Static).update(text)
        self.query_one("#availability", Static).tooltip = "\n".join(visible(m) for m in missing)

    def _choice(self, backend: Optional[str] = None) -> Optional[RunChoice]:
        backend = backend or self.query_one(ChoiceSet).chosen or "auto"
        try:
            iters = int(self.query_one("#iters", Input).value or self.iters)
        except ValueError:
            iters = self.iters
        batch_text = self.query_one("#batch", Input).value.strip()
        batch = int(batch_text) if batch_text.isascii() and batch_text.isdigit() and int(batch_text) > 0 else None
        return RunChoice(backend, max(1, iters), batch)

    @on(Button.Pressed, "#run")
    def _run(self) -> None:
        self.dismiss(self._choice())

    @on(ChoiceSet.Chosen, "#backend")
    def _chosen(self, event: ChoiceSet.Chosen) -> None:
        self.dismiss(self._choice(event.name))

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.dismiss(self._choice())

    @on(Button.Pressed, "#cancel")
    def action_dismiss_none(self) -> None:
        self.dismiss(None)


# ---------------------------------------------------------------------- export

EXPORT_FORMATS = (("driver", "runnable MIOpenDriver script (.sh)", ".sh"), ("csv", "CSV, with run results (.csv)",
                                                                          ".csv"),
                  ("json", "JSON, the decode contract, with run results (.json)", ".json"))
_EXT = {k: e for k, _, e in EXPORT_FORMATS}


@dataclass(frozen=True)
class ExportChoice:
    fmt: str
    path: str


def default_export_path(fmt: str, directory: str = ".") -> str:
    return os.path.join(directory, "miotui_layers" + _EXT[fmt])


class ExportScreen(ModalScreen[Optional[ExportChoice]]):
    """Export the layers the table shows (its filter and op tab apply), in its order."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="export.cancel")]

    def __init__(self, count: int, total: int, scope: str = "", directory: str = ".") -> None:
        super().__init__(classes="dialog-screen")
        self.count = count
        self.total = total
        self.scope = scope
        self.directory = directory

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="export-dialog"):
            what = (f"Export the {self.count:,} layers the table shows" if self.count == self.total else
                    f"Export {self.count:,} of {self.total:,} layers: the ones the table shows")
            yield Label(Text(what), classes="dialog-title")
            if self.scope:
                yield Static(Text(visible(self.scope)), id="export-scope", classes="dim")
            yield Static("arrows choose (the file name follows), enter exports, tab edits the name", classes="dim")
            with ChoiceSet(id="format"):
                for i, (key, text, _) in enumerate(EXPORT_FORMATS):
                    yield RadioButton(text, value=i == 0, name=key, id=f"format-{key}")
            with Horizontal(classes="field-row"):
                yield Label("file", classes="field-label")
                yield Input(default_export_path("driver", self.directory), id="path")
            with Horizontal(classes="buttons"):
                yield Button("Export", variant="primary", id="export")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(RadioSet).focus()

    @on(RadioSet.Changed)
    def _format_changed(self, event: RadioSet.Changed) -> None:
        fmt = event.pressed.name or "driver"
        path_input = self.query_one("#path", Input)
        base, ext = os.path.splitext(path_input.value)
        if ext in _EXT.values() or not ext:
            path_input.value = base + _EXT[fmt]

    def _choice(self, fmt: Optional[str] = None) -> Optional[ExportChoice]:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            return None
        base, ext = os.path.splitext(path)
        if fmt is None:
            by_ext = {e: k for k, e in _EXT.items()}
            # a typed name's extension says what the user wants (x.csv is CSV)
            fmt = by_ext.get(ext) or self.query_one(ChoiceSet).chosen or "driver"
        elif ext in _EXT.values() and ext != _EXT[fmt]:
            path = base + _EXT[fmt]
        return ExportChoice(fmt, os.path.expanduser(path))

    @on(ChoiceSet.Chosen, "#format")
    def _chosen(self, event: ChoiceSet.Chosen) -> None:
        self.dismiss(self._choice(event.name))

    @on(Button.Pressed, "#export")
    @on(Input.Submitted)
    def _export(self) -> None:
        self.dismiss(self._choice())

    @on(Button.Pressed, "#cancel")
    def action_dismiss_none(self) -> None:
        self.dismiss(None)
