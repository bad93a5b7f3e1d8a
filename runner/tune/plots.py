"""A study's figures, drawn by Optuna's Matplotlib visualisations into the run directory's
plots/: the optimisation history, the parameters' importances (two parameters or more, and
enough complete trials to fit them) and the parallel coordinates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.manifest.tune import TuneSpec

PLOTS_DIR = "plots"
MIN_TRIALS_FOR_IMPORTANCE = 3  # fANOVA's forest fit on fewer says nothing


def write_plots(run_dir: Path, study: Any, spec: TuneSpec) -> list[str]:
    """Draw what this study supports; returns a warning line for each figure it could not."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as views

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    wanted: dict[str, Any] = {"tune-history.png": views.plot_optimization_history}
    if (spec.space == "zoo" or len(spec.space) >= 2) and len(complete) >= MIN_TRIALS_FOR_IMPORTANCE:
        wanted["tune-importance.png"] = views.plot_param_importances
    if len(complete) >= 2:
        wanted["tune-parallel.png"] = views.plot_parallel_coordinate
    out = run_dir / PLOTS_DIR
    out.mkdir(exist_ok=True)
    problems = []
    for name, draw in wanted.items():
        try:
            axes = draw(study)
            figure = axes.figure if hasattr(axes, "figure") else axes.flat[0].figure
            figure.set_size_inches(9, 5)
            figure.tight_layout()
            figure.savefig(out / name, dpi=100)
            plt.close(figure)
        except Exception as exc:  # a figure is a help, never the study's failure
            problems.append(f"warning: {name} not drawn: {type(exc).__name__}: {exc}")
    return problems
