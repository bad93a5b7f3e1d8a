"""The end of a run's imports, made while its units run.

When the last unit is evaluated, the runner reads the TensorBoard files (TensorBoard's reader),
aggregates seeds (SciPy's statistics, from two seeds on) and draws the report's figures
(Matplotlib): about a second of imports here, on the way to the answer. `start()` imports them
in a background thread while the runner waits on its units, so on a machine with a core to
spare they cost nothing there; where there is none they cost what they would have anyway. An
import that fails here is left to fail where it is used, with that place's message.
"""

from __future__ import annotations

import contextlib
import importlib
import threading


def modules(report: bool, seeds: int) -> list[str]:
    """What the summary (and the report, when one is written) will import."""
    names = ["tensorboard.backend.event_processing.event_accumulator", "runner.report.tb"]
    names += ["scipy.stats", "runner.report.stats"] if seeds > 1 else []
    names += ["runner.report.plots:load_matplotlib", "runner.report.write"] if report else []
    return names


def _load(name: str) -> None:
    module, _, call = name.partition(":")
    loaded = importlib.import_module(module)
    if call:
        getattr(loaded, call)()


def start(names: list[str]) -> threading.Thread:
    def work() -> None:
        for name in names:
            with contextlib.suppress(Exception):
                _load(name)

    thread = threading.Thread(target=work, name="rlcrate-prewarm", daemon=True)
    thread.start()
    return thread
