"""Reactions (issue 19 §6): ``enter``, ``escape`` and ``i`` while following did up to 490 ms
of work on the UI thread.  What made them slow is checked here as behaviour (the times are
measured by ``benchmarks/bench_app.py --only keys``, never by a timed test): the screens are
not rebuilt on open, the footer is not rebuilt when its keys are the same, and the detail's
tables and the first-iteration timeline are laid out in a worker thread."""

from __future__ import annotations

import threading

from pilot_helpers import SIZE, app_for, conv, loaded, plain, pool, table, wait_until
from textual.widgets import Footer

from miotui.screens.detail import DetailScreen
from miotui.screens.startup import StartupScreen


async def test_enter_reopens_the_same_detail_screen_showing_the_new_layer(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv() + conv(n=4) + pool())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 3)
        table(app).move_cursor_to(1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and getattr(app.screen, 'ready', True))
        first = app.screen
        assert "conv -n 1 " in plain(first.query_one("#detail-command"))
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.layers_screen)
        table(app).move_cursor_to(3)
        await pilot.press("enter")
        assert app.screen is first, "the detail screen is reopened, not composed again"
        assert "Layer 3: pool" in plain(first.query_one("#detail-title"))
        assert "LogCmdConvolution" not in plain(first.query_one("#detail-raw")), \
            "never the sections of the layer shown before under this title"
        await wait_until(pilot, lambda: getattr(app.screen, 'ready', True))
        assert "Pooling_logging_cmd" in plain(first.query_one("#detail-raw"))
        await pilot.press("escape", "i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen))
        startup = app.screen
        await pilot.press("escape", "i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen))
        assert app.screen is startup


async def test_the_footer_is_not_rebuilt_when_its_keys_are_the_same(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv() + pool())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        footer = app.layers_screen.query_one(Footer)
        await wait_until(pilot, lambda: len(footer.query("FooterKey")) > 3)
        keys = list(footer.query("FooterKey"))
        for _ in range(2):
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen))
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.layers_screen)
        await pilot.press("down", "up")
        # a fixed pause, not a wait for a condition: the time a wrong rebuild of the footer
        # (after the bindings' refresh) would take to happen, before checking it did not
        await pilot.pause(0.2)
        assert list(footer.query("FooterKey")) == keys, "the same keys: the same widgets, not rebuilt"


async def test_the_detail_and_the_timeline_are_laid_out_off_the_ui_thread(tmp_path, monkeypatch):
    from miotui.samplegen.generator import generate_text
    from miotui.samplegen.spec import SampleSpec
    from miotui.screens import detail, startup
    from miotui.widgets.prerender import render_text
    threads: list[tuple[str, bool]] = []

    def spy(renderable, width):       # the real layout, noting where it ran
        threads.append((type(renderable).__name__, threading.current_thread() is threading.main_thread()))
        return render_text(renderable, width)

    monkeypatch.setattr(detail, "render_text", spy)
    monkeypatch.setattr(startup, "render_text", spy)
    log = tmp_path / "train.log"
    log.write_text(generate_text(SampleSpec(format="info", iterations=1, startup=True)))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished, timeout=30)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and getattr(app.screen, 'ready', True))
        assert "Table" in {name for name, _ in threads}
        await pilot.press("escape", "i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen) and getattr(app.screen, 'ready', True))
        assert "#" in plain(app.screen.query_one("#startup-timeline"))
        assert threads and not any(on_main for _, on_main in threads), threads


async def test_a_slow_full_collection_freezes_the_heap_while_the_app_runs_and_quitting_gives_it_back(tmp_path):
    """Full collections of the whole heap (50-340 ms on the 2-core host) were the slow tail of
    the keys: after a slow one the app freezes what survived (``miotui.gc_freeze``).  The
    clock says every collection is slow: no test depends on this host's speed."""
    import gc

    log = tmp_path / "train.log"
    log.write_text(conv() + pool())
    app = app_for([log])
    ticks = iter(range(10**9))
    app.gc_freeze.clock = lambda: float(next(ticks))        # each reading a second later
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        gc.collect()
        assert app.gc_freeze.freezes >= 1 and gc.get_freeze_count() > 0
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen))
    assert gc.get_freeze_count() == 0, "quitting gives the frozen heap back to the collector"


async def test_the_status_line_and_an_unchanged_time_line_update_without_laying_out_the_screen(tmp_path, monkeypatch):
    """Static.update lays the screen out by default: the status line (one fixed line, ~10
    updates a second while following) did so on every poll, most of the UI thread's work
    between keys.  The time line's height follows its number of lines: it is laid out when
    that changes, and then shows them all."""
    from textual.widgets import Static

    from miotui.widgets.status_bar import StatusInfo

    log = tmp_path / "train.log"
    log.write_text(conv() + pool())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        screen = app.layers_screen
        laid_out: list[str] = []
        refresh = Static.refresh

        def spy(self, *regions, **kw):          # the real refresh, noting who asked for a layout
            if kw.get("layout"):
                laid_out.append(self.id or "")
            return refresh(self, *regions, **kw)

        monkeypatch.setattr(Static, "refresh", spy)
        screen.status.set_info(StatusInfo(sources="x.log", lines=12345))
        assert "12,345 lines" in plain(screen.query_one("#status-text"))
        assert "status-text" not in laid_out, laid_out
        screen.set_time_line("one line")
        await pilot.pause()
        laid_out.clear()
        screen.set_time_line("another line")
        assert "time-line" not in laid_out, laid_out
        screen.set_time_line("two\nlines")
        assert "time-line" in laid_out
        await pilot.pause()
        line = screen.query_one("#time-line")
        assert line.size.height == 2 and "lines" in plain(line)
