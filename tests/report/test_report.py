"""Reports from run directories built with real (tiny) SB3 training and real TensorBoard files."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from runner import report
from runner.errors import UserInputError
from runner.manifest import Manifest, resolved
from runner.record.status import StatusFields, together, write_status
from runner.report.diff import manifest_differences
from runner.report.segments import Segment, join
from runner.report.summary import write_summary
from runner.report.tb import Curve, read_curve, time_to_reach
from tests.helpers import tiny_manifest

SEEDS = [0, 1, 2, 3]
LEVEL = 15.0  # a reward level the tiny runs reach
MANIFEST = Manifest.model_validate(
    tiny_manifest(
        seeds=SEEDS,
        matrix={"algo.params.n_steps": [32, 64]},
        expect={"eval.mean_reward": {">=": 30.0}},  # V1 (27.5) misses, V2 (34) meets
        eval__reward_levels=[LEVEL],
    )
)
RESOLVED = resolved(MANIFEST)
V1, V2 = RESOLVED.variants  # the runner's own variant names
EVAL = {  # per-seed eval means; V2 seed 2 failed, V2 seed 3 never ran
    V1: {0: 20.0, 1: 30.0, 2: 25.0, 3: 35.0},
    V2: {0: 40.0, 1: 28.0},
}


def _train(udir: Path, seed: int, n_steps: int) -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import configure

    model = PPO(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=n_steps,
        batch_size=n_steps,
        n_epochs=1,
        seed=seed,
        device="cpu",
    )
    model.set_logger(configure(str(udir / "tb"), ["tensorboard"]))
    model.learn(256)


def _write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _make_run(root: Path, name: str, run_id: str, seeds: list[int], tb_from: Path | None) -> Path:
    """A run directory as the runner leaves one: real TensorBoard files (trained here, or copied
    from `tb_from`), status.json and eval.json per unit, summary.json by the runner's writer."""
    run = root / name / run_id
    for variant, n_steps in ((V1, 32), (V2, 64)):
        for seed in seeds:
            udir = run / "units" / variant / f"seed-{seed}"
            if seed not in EVAL[variant] and seed != 2:
                continue  # never started: no directory at all
            started = time.time()
            if tb_from is not None:
                shutil.copytree(tb_from / "units" / variant / f"seed-{seed}" / "tb", udir / "tb")
                started = json.loads(
                    (tb_from / "units" / variant / f"seed-{seed}" / "status.json").read_text()
                )["train_started"]
            else:
                _train(udir, seed, n_steps)
            status: StatusFields = {"variant": variant, "seed": seed, "train_started": started}
            if seed in EVAL[variant]:
                mean = EVAL[variant][seed]
                write_status(udir, "done", **status)
                _write(
                    udir / "eval.json",
                    {
                        # two episodes whose mean and std are the recorded ones (an eval.json
                        # whose figures disagree with its episodes is not believed)
                        "episodes": [
                            {"return": mean - 1.5, "length": 10},
                            {"return": mean + 1.5, "length": 10},
                        ],
                        "mean": mean,
                        "std": 1.5,
                        "deterministic": True,
                    },
                )
            else:
                write_status(udir, "failed", **together(status, {"error": "RuntimeError: boom"}))
    res = RESOLVED.model_copy(update={"name": name, "seeds": seeds})
    (run / "resolved.yaml").write_text(yaml.safe_dump(res.dump(), sort_keys=False))
    write_summary(run, res)
    return run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = _make_run(tmp_path_factory.mktemp("runs"), "tiny", "r1", SEEDS, None)
    # A unit whose TensorBoard file was damaged after the fact.
    (tb_file,) = (run / "units" / V1 / "seed-1" / "tb").glob("events.out.tfevents.*")
    data = tb_file.read_bytes()
    tb_file.write_bytes(data[:20] + b"\x00garbage" * 64 + data[-100:])
    return run


pytestmark = pytest.mark.gymnasium


@pytest.mark.slow  # its run directory trains real agents
def test_report_on_run_with_failed_missing_and_corrupt_units(run_dir):
    md = report.write_report(run_dir)
    text = md.read_text()
    assert md == run_dir / "report.md"
    # Missing or incomplete units are listed with their state and error.
    assert f"`{V2}` seed 2: failed: RuntimeError: boom" in text
    assert f"`{V2}` seed 3: missing" in text
    # The damaged TensorBoard file is named, not a crash.
    assert "corrupt or unreadable event file" in text
    # Eval table: across-seed mean of V1 = mean(20, 30, 25, 35) = 27.5; V2 has 2 of 4 seeds.
    row_v1 = next(line for line in text.splitlines() if line.startswith(f"| {V1} | 0: 20"))
    assert "27.5 ± 6.45" in row_v1 and "4/4" in row_v1
    assert "2/4" in next(line for line in text.splitlines() if line.startswith(f"| {V2} | 0: 40"))
    # Paired comparison over the one varied field: seeds 0 and 1 in common: +20, -2.
    assert "Paired comparison over `algo.params.n_steps`" in text
    assert "0: 20, 1: -2" in text and "1–1–0" in text
    assert "## Expectations" in text and "❌ not met" in text and "✅ met" in text
    assert "## Time to reach reward levels" in text
    for png in ("learning_curves.png", "eval.png"):
        path = run_dir / "plots" / png
        assert path.is_file() and path.stat().st_size > 20_000, png
        assert f"plots/{png}" in text
    tex = (run_dir / "eval_table.tex").read_text()
    assert r"\toprule" in tex and r"n\_steps-32 & 27.5 $\pm$ 6.45" in tex


@pytest.mark.slow  # its run directory trains real agents
def test_summary_and_report_measure_time_to_reach_alike(run_dir):
    """One reader, one origin (train_started): summary.json and the report's curves agree."""
    summary = json.loads((run_dir / "summary.json").read_text())
    run = report.load_run(run_dir)
    for seed in (0, 1):
        in_summary = summary["variants"][V2]["time_to_reward"][str(LEVEL)]["per_seed"][str(seed)]
        curve = run.units[V2, seed].curve
        assert curve is not None
        hit = time_to_reach(curve, LEVEL)
        assert in_summary is not None and hit is not None and in_summary == hit[0]


def _bench(name: str, axis: dict, points: list[dict], findings: list[str]) -> dict:
    """A bench.json as the bench job writes it (format 0: before records carried one)."""
    settings = {"steps": 256, "warmup": 0, "repeats": 3, "train": True, "flatten_efficiency": 0.5}
    return {"name": name, "axis": axis, "sweep": {axis["label"]: [p["x"] for p in points]},
            "variants": ["default"], "settings": settings,
            "host": {"cpu_model": "X", "cpu_count": 2}, "started": "2026-12-01T10:00:00+0000",
            "points": points, "findings": findings}  # fmt: skip


def _point(label: str, x: object) -> dict:
    return {"label": label, "variant": "default", "x": x, "overrides": {}, "error": None}


@pytest.mark.slow  # its run directory trains real agents
def test_report_includes_bench_and_regenerates_scaling_plot(run_dir, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    point = {
        "env_only": {"steps_per_s": {"median": 1000.0, "min": 900.0, "max": 1100.0}, "steps": 256},
        "train": {
            "steps_per_s": {"median": 100.0, "min": 90.0, "max": 110.0},
            "steps": 256,
            "env_fraction": 0.25,
        },
    }
    bench = _bench(
        "tiny",
        {"label": "parallel.envs", "numeric": True, "log2": True},
        [
            dict(point, **_point("1", 1), speedup={"env_only": 1, "train": 1}),
            dict(  # with the newer figures; point 1 is a bench.json from before them
                point,
                **_point("2", 2),
                speedup={"env_only": 1, "train": 1},
                inference={
                    "steps_per_s": {"median": 400.0, "min": 380.0, "max": 420.0},
                    "steps": 256,
                },
                cold_start={"seconds": 3.5, "processes": 1},
            ),
        ],
        ["env-only steps/s flattens at parallel.envs=2"],
    )
    _write(run / "bench.json", bench)
    text = report.write_report(run).read_text()
    assert "## Benchmark" in text and "flattens at parallel.envs=2" in text
    assert "| 1 | 1,000 [900–1,100] | – | 100 [90–110] | 25% | – |" in text
    assert "| 2 | 1,000 [900–1,100] | 400 [380–420] | 100 [90–110] | 25% | 3.5 s |" in text
    assert (run / "plots" / "scaling.png").stat().st_size > 20_000


@pytest.mark.slow  # its run directory trains real agents
def test_compare_runs_pairs_seeds(run_dir, tmp_path):
    other = _make_run(tmp_path, "tiny", "r2", SEEDS, run_dir)
    md = report.compare_runs(run_dir, other, tmp_path / "cmp")
    text = md.read_text()
    assert md == tmp_path / "cmp" / "compare.md"
    assert f"## B − A: {V1}" in text and "0: 0, 1: 0, 2: 0, 3: 0" in text
    assert (tmp_path / "cmp" / "learning_curves.png").is_file()


@pytest.mark.slow  # its run directory trains real agents
def test_compare_runs_refuses_mismatched_seeds(run_dir, tmp_path):
    other = _make_run(tmp_path, "tiny", "r3", [0, 1, 5, 6], run_dir)
    with pytest.raises(UserInputError, match="seeds differ"):
        report.compare_runs(run_dir, other, tmp_path / "cmp")


def test_not_a_run_directory(tmp_path):
    with pytest.raises(UserInputError, match="not a run directory"):
        report.write_report(tmp_path)


def test_read_curve_problems(tmp_path):
    assert (read_curve(tmp_path / "nope", None)[1] or "").startswith("no TensorBoard event files")
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"")
    curve, problem = read_curve(tmp_path / "tb", None)
    assert curve is None and "empty event file" in (problem or "")


def test_time_to_levels_direct():
    steps = np.array([10.0, 20.0, 30.0])
    curves = [
        Curve(steps, np.array([1.0, 5.0, 9.0]), np.array([1.0, 2.0, 3.0])),
        Curve(steps, np.array([1.0, 2.0, 6.0]), np.array([2.0, 4.0, 6.0])),
    ]
    res = report.time_to_levels(curves, [5.0, 8.0])
    assert res[5.0]["reached"] == 2 and res[5.0]["mean_s"][0] == pytest.approx(4.0)  # (2 + 6) / 2
    assert res[5.0]["mean_steps"][0] == pytest.approx(25.0)
    assert res[8.0]["reached"] == 1 and res[8.0]["mean_s"] == (3.0, 0.0)


def test_bench_only_run_reports_the_bench(tmp_path):
    run = tmp_path / "run"
    _write(run / "summary.json", {"name": "b", "run_id": "r", "seeds": [0], "variants": {}})
    env_only = {"steps_per_s": {"median": 10.0, "min": 9.0, "max": 11.0}, "steps": 16}
    point = {**_point("subproc", None), "envs": 16, "env_only": env_only}
    bench = _bench("b", {"label": "variant", "numeric": False, "log2": False}, [point], [])
    _write(run / "bench.json", bench)
    text = report.write_report(run).read_text()
    assert "No unit has been trained" in text and "| subproc | 10 [9–11] | – |" in text


@pytest.mark.slow  # its run directory trains real agents
def test_compare_cli_writes_a_folder_of_its_own_with_manifest_differences(run_dir, tmp_path):
    from tests.helpers import rlcrate

    other = _make_run(tmp_path / "b", "tiny", "r5", SEEDS, run_dir)
    resolved = yaml.safe_load((other / "resolved.yaml").read_text())
    before = resolved["eval"]["reward_levels"]
    resolved["eval"]["reward_levels"] = [100.0]  # as resolve() writes a float field
    (other / "resolved.yaml").write_text(yaml.safe_dump(resolved))
    before_a, before_b = sorted(run_dir.rglob("*")), sorted(other.rglob("*"))
    out = rlcrate("report", str(run_dir), str(other))
    assert out.returncode == 0, out.stderr
    md = run_dir.parent.parent / "comparisons" / "tiny-r1--vs--tiny-r5" / "compare.md"
    assert out.stdout.strip() == f"report: {md}"
    text = md.read_text()
    assert "## How the manifests differ" in text
    assert "A ran somewhere unrecorded (no readable provenance.json)" in text
    assert f"| eval.reward_levels | `{before}` | `[100.0]` |" in text, text[:1500]
    # the runs are named, A first as in the plot's title and legend (both are "tiny")
    assert text.startswith("# tiny (r1) vs tiny (r5)\n"), text[:200]
    assert f"| A tiny (r1): {V1} |" in text and f"| B tiny (r5): {V1} |" in text, text[:3000]
    assert sorted(run_dir.rglob("*")) == before_a and sorted(other.rglob("*")) == before_b


def test_wall_time_curves_show_every_seed_and_where_the_mean_ends(tmp_path, monkeypatch):
    """Seeds that train for 3.4, 4.0 and 5.2 s: the mean covers 0-3.4 s (where all seeds have
    data); every seed is drawn to its own end and a dotted line marks where the mean stops.
    On the steps axis all seeds end together: nothing extra."""
    from runner.report import plots

    figures = []

    def save(fig, path):
        figures.append(fig)
        return path

    monkeypatch.setattr(plots, "_save", save)
    steps = np.linspace(0, 1000, 20)
    curves = [
        Curve(steps, np.linspace(10, 100, 20) + i, np.linspace(0, end, 20))
        for i, end in enumerate((3.4, 4.0, 5.2))
    ]
    shifted = [Curve(c.steps, c.values, c.wall_s + 0.2) for c in curves]  # ends close by
    plots.learning_curves({"default": curves, "other": shifted}, tmp_path / "lc.png", title="t")
    (fig,) = figures
    by_steps, by_wall = fig.axes[:2]
    wall_ends = sorted(round(float(ln.get_xdata()[-1]), 2) for ln in by_wall.get_lines())
    assert wall_ends[:5] == [3.4, 3.4, 3.4, 3.6, 3.6], wall_ends  # means, dotted marks
    # where the means end is said in the panel's own legend (placed where it covers the least
    # data), never in labels at the dotted lines that overlap when the ends are close
    legend = by_wall.get_legend()
    assert legend.get_title().get_text() == "mean ends (dotted)"
    assert [t.get_text() for t in legend.get_texts()] == ["default: 3.4 s", "other: 3.6 s"]
    assert not by_wall.texts and not by_steps.texts and by_steps.get_legend() is None
    assert len(by_steps.get_lines()) == 2
    assert "the mean stops where the shortest seed ends" in fig._suptitle.get_text()


def test_joined_segments_have_no_dip_and_no_stopped_time():
    first = Segment("PPO_1", 100.0, [(110.0, 100, 1.0), (120.0, 200, 2.0), (130.0, 300, 3.0)])
    # killed after step 300, continued from the checkpoint at 200, an hour later
    second = Segment("resumed-200", 4000.0, [(4005.0, 300, 2.5), (4015.0, 400, 4.0)])
    points, used = join([second, first])
    assert used == 2
    assert [p[1] for p in points] == [100, 200, 300, 400]
    assert [p[2] for p in points] == [1.0, 2.0, 2.5, 4.0]
    assert [p[0] for p in points] == [10.0, 20.0, 25.0, 35.0]  # training seconds, no gap
    scratch = Segment("PPO_2", 5000.0, [(5010.0, 100, 0.5)])
    assert [p[1] for p in join([first, scratch])[0]] == [100]


def test_manifest_differences_are_listed():
    a = {"name": "a", "algo": {"name": "PPO", "params": {}}, "seeds": [0], "variants": {"x": 1}}
    b = {"name": "b", "algo": {"name": "A2C", "params": {"n_steps": 5}}, "seeds": [0]}
    assert manifest_differences(a, b) == [
        ("algo.name", "PPO", "A2C"),
        ("algo.params", {}, "(not set)"),
        ("algo.params.n_steps", "(not set)", 5),
        ("name", "a", "b"),
    ]


@pytest.mark.slow  # a toy run (torch-free, about 10 s) through the console script
def test_long_variant_names_shortened_alike_everywhere_and_levels_recomputed(
    write_manifest, tmp_path
):
    """A list matrix whose entries move several values together: each variant is named by what
    tells them apart (the full names pass 40 characters), the same in its folder, the run's
    summary table and report.md. `report --levels` prints the time-to-reach table at other
    levels from the run's files, changing none of them."""
    from tests.helpers import rlcrate, run_dir_of, toy_manifest

    kwargs = {"max_episode_steps": 200}
    m = toy_manifest(
        seeds=[0],
        eval__reward_levels=[1e9],  # the manifest's level: never reached
        matrix=[
            {"algo.params": {"noise": 0.5, "step_ms": 0.0}, "env.kwargs": kwargs},
            {"algo.params": {"noise": 0.25, "step_ms": 0.0}, "env.kwargs": kwargs},
        ],
    )
    out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"), report=True)
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "toy")
    assert sorted(p.name for p in (run / "units").iterdir()) == ["noise-0.25", "noise-0.5"]
    rows = [line for line in out.stdout.splitlines() if "noise-" in line]
    assert len(rows) == 2 and all(len(line) < 120 for line in rows), out.stdout
    text = (run / "report.md").read_text()
    assert "| noise-0.5 | 0:" in text and "| noise-0.25 | 0:" in text, text
    assert "params-" not in text and "not reached" in text
    files = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    levels = rlcrate("report", str(run), "--levels", "5,1e9")
    assert levels.returncode == 0, levels.stdout + levels.stderr
    table = [line for line in levels.stdout.splitlines() if "noise-" in line]
    assert len(table) == 4, levels.stdout  # two variants x two levels
    assert "1/1" in table[0] and "not reached" in table[1], levels.stdout
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == files
    bad = rlcrate("report", str(run), "--levels", "5,many")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --levels '5,many': expected")
