"""The command line through Typer's runner, plus what a shell sees (exit codes, import cost)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runner.cli import COMMANDS, app
from runner.cli.lazy import load
from tests.helpers import PLUGINS, ROOT, rlcrate, run_dir_of, tiny_manifest, toy_manifest

runner = CliRunner()
MANIFESTS = sorted((ROOT / "manifests").glob("*.yaml"))


def test_help_lists_the_design_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for cmd in (
        "run",
        "train",
        "eval",
        "bench",
        "validate",
        "schema",
        "report",
        "archive",
        "reproduce",
        "doctor",
        "envs",
    ):
        assert cmd in result.output


def test_cli_import_pulls_no_heavy_modules():
    code = (
        "import sys, runner.cli; heavy = [m for m in ('torch', 'jax', 'envpool', 'godot_rl', "
        "'ray', 'stable_baselines3', 'gymnasium', 'optuna') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# Python imports a `sitecustomize` module on the path at start-up: this one writes, at exit, which
# of the modules a command that only looks must not need were imported
LOOKS_SITE = """
import atexit, os, sys
def _log():
    with open(os.environ["RLCRATE_TEST_MODULES"], "w") as f:
        f.write(" ".join(m for m in os.environ["RLCRATE_TEST_WATCH"].split() if m in sys.modules))
atexit.register(_log)
"""
NUMERICAL = "torch numpy matplotlib scipy"
# what only the commands need: `--help` lists them without importing their modules
COMMAND_MODULES = "pydantic runner.executors runner.manifest " + " ".join(
    {entry.module for entry in COMMANDS.values()}
)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    """A finished two-seed run of the torch-free toy trainer; tests that change it copy it."""
    out = tmp_path_factory.mktemp("toy-run")
    (out / "m.yaml").write_text(yaml.safe_dump(toy_manifest(seeds=[0, 1])))
    run = rlcrate("run", str(out / "m.yaml"), "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    return run_dir_of(out, "toy")


def test_no_report_leaves_the_summary_and_report_writes_the_rest_later(toy_run, tmp_path):
    """`run --no-report` (the fixture's run, through the console script): summary.json and the
    table, no report.md or plots; `rlcrate report` writes them afterwards."""
    import shutil

    run = Path(shutil.copytree(toy_run, tmp_path / toy_run.name))
    assert (run / "summary.json").is_file()
    assert not (run / "report.md").exists() and not (run / "plots").exists()
    res = rlcrate("report", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    assert (run / "report.md").is_file() and list((run / "plots").glob("*.png"))


def test_commands_that_only_look_import_no_torch_numpy_or_matplotlib(toy_run, tmp_path):
    """`--help`, `validate` of a manifest whose env check needs no backend import, and `status`
    of a finished two-seed run (its summary as the runner wrote it) start no numerical stack."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(LOOKS_SITE)
    log = tmp_path / "modules.txt"
    env = {
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(PLUGINS), str(site)]),
        "RLCRATE_TEST_MODULES": str(log),
    }
    quickstart = str(ROOT / "manifests" / "quickstart.yaml")
    # EnvPool's id catalogue is read once per EnvPool version (importing envpool), then cached:
    # the first validate after installing one pays that import, the next ones do not
    assert rlcrate("envs", "envpool").returncode == 0
    for args, watch in (
        (["--help"], f"{NUMERICAL} {COMMAND_MODULES}"),
        (["validate", quickstart], NUMERICAL),
        (["status", str(toy_run)], NUMERICAL),
    ):
        res = rlcrate(*args, env_extra={**env, "RLCRATE_TEST_WATCH": watch})
        assert res.returncode == 0, res.stdout + res.stderr
        assert log.read_text() == "", f"rlcrate {args[0]} imported {log.read_text()}"
        log.unlink()


def first_paragraph(help: str | None) -> str:
    """The line Typer's help listing shows for a command with this help text."""
    import inspect

    return " ".join(inspect.cleandoc(help or "").split("\n\n")[0].split())


def test_help_shows_each_commands_own_first_line():
    """`rlcrate --help` lists the commands from runner.cli.COMMANDS without loading them; each
    line there is the first paragraph of the loaded command's own help, in the same order."""
    wide = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}  # one line per command
    shown = runner.invoke(app, ["--help"], env=wide).output
    rows = [m.groups() for m in re.finditer(r"^│ (\S+) +(.+?) *│$", shown, re.M)][2:]
    assert [name for name, _ in rows] == list(COMMANDS)  # after the two options, in order
    for name, line in rows:
        assert line == COMMANDS[name].help == first_paragraph(load(name, COMMANDS[name]).help)


def test_status_shows_the_written_summary_while_it_is_current(toy_run, tmp_path):
    """`status` prints summary.json as the runner wrote it; once a unit's files are newer (a
    resume, an eval again) or the file is damaged, it summarises the unit files again."""
    import shutil

    run = Path(shutil.copytree(toy_run, tmp_path / toy_run.name))  # summary.json names its id
    path = run / "summary.json"
    real = json.loads(path.read_text())["variants"]["default"]["eval"]["mean"]
    marked = json.loads(path.read_text())
    marked["variants"]["default"]["eval"]["mean"] = 12345.0
    path.write_text(json.dumps(marked))
    shown = rlcrate("status", str(run))
    assert shown.returncode == 0 and "12,345.00" in shown.stdout, shown.stdout + shown.stderr

    eval_file = run / "units" / "default" / "seed-1" / "eval.json"
    eval_file.write_text(eval_file.read_text())  # newer than summary.json
    again = rlcrate("status", str(run))
    assert again.returncode == 0, again.stderr
    assert "12,345.00" not in again.stdout and f"{real:,.2f}" in again.stdout, again.stdout

    units = {"0": {"state": "done"}, "1": None}
    wrong = {**marked, "variants": {"default": {**marked["variants"]["default"], "units": units}}}
    for damaged in ('{"name": "toy", "variants": {"default": 3}}', "[]", "{", json.dumps(wrong)):
        path.write_text(damaged)
        res = rlcrate("status", str(run))
        assert res.returncode == 0 and f"{real:,.2f}" in res.stdout, res.stdout + res.stderr
        assert "Traceback" not in res.stderr


def test_validate_good_and_bad(write_manifest):
    good = runner.invoke(app, ["validate", str(write_manifest(tiny_manifest(seeds=[0, 1])))])
    assert good.exit_code == 0, good.output
    assert "1 variant(s) x 2 seed(s) = 2 units" in good.output
    bad = write_manifest(tiny_manifest(parallel__envs=0, seeds=[]), "bad.yaml")
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith(f"error: {bad}:") for line in lines)
    assert "Traceback" not in result.output


def test_missing_manifest_is_exit_2(tmp_path):
    result = runner.invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2


def test_bad_jobs_option_is_exit_2(write_manifest, tmp_path):
    result = runner.invoke(
        app,
        [
            "run",
            str(write_manifest(tiny_manifest())),
            "--jobs",
            "trian",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert result.exit_code == 2
    assert "--jobs" in result.stderr
    assert not (tmp_path / "runs").exists()  # nothing started, nothing written


def test_schema_is_json_schema_and_checked_in():
    """`rlcrate schema` has every installed backend's and trainer's options (the tests' toys
    too); the file in the repository, rlcrate's own."""
    from runner.manifest import json_schema
    from runner.plugins import OWN

    result = runner.invoke(app, ["schema"])
    schema = json.loads(result.output)
    assert schema["additionalProperties"] is False
    assert {"env", "parallel", "algo", "seeds", "matrix", "expect"} <= set(schema["properties"])
    by_backend = schema["properties"]["env"]["discriminator"]["mapping"]
    assert set(by_backend) == {*OWN["backend"], "toy"}
    assert set(schema["$defs"]["GodotEnv"]["properties"]) >= {"pacing", "speedup", "timeout"}
    assert "pacing" not in schema["$defs"]["EnvpoolEnv"]["properties"]
    by_trainer = {ref["$ref"].rsplit("/", 1)[1] for ref in schema["properties"]["algo"]["anyOf"]}
    assert {"Sb3Algo", "Sb3Algorithms", "BraxPpoAlgo", "ToyClimbAlgo"} <= by_trainer
    assert {"policy", "normalize"} <= set(schema["$defs"]["Sb3Algo"]["properties"])
    assert "policy" not in schema["$defs"]["BraxPpoAlgo"]["properties"]
    on_disk = json.loads((ROOT / "runner/manifest/manifest.schema.json").read_text())
    own = json_schema(list(OWN["backend"]), list(OWN["trainer"]))
    assert on_disk == own, "regenerate it: make schema"


def _backends(data: dict) -> list[str]:
    """The manifest's backend and any a matrix entry switches to (`env.backend` or `env:`)."""
    found = [data["env"]["backend"]]
    matrix = data.get("matrix") or []
    entries = matrix if isinstance(matrix, list) else [{k: v for k, v in matrix.items()}]
    for entry in entries:
        value = entry.get("env.backend") or (entry.get("env") or {}).get("backend")
        values = value if isinstance(value, list) else [value]
        found += [v for v in values if isinstance(v, str)]
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("path", MANIFESTS, ids=[p.stem for p in MANIFESTS])
def test_example_manifests_validate_and_name_the_schema(path):
    assert path.read_text().startswith(
        "# yaml-language-server: $schema=../runner/manifest/manifest.schema.json"
    )
    from runner.backends import get_backend
    from runner.record.machine import gpu_info

    data = yaml.safe_load(path.read_text())
    for backend in _backends(data):
        reason = get_backend(backend).available()
        if reason:
            pytest.skip(f"{path.name}: {reason}")
    if str(data.get("algo", {}).get("device", "cpu")).startswith("cuda") and not gpu_info()["gpus"]:
        pytest.skip(f"{path.name} is for a GPU machine (algo.device cuda) and this one has none")
    result = runner.invoke(app, ["validate", str(path)])
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    if str(data["env"]["id"]).endswith(".x86_64") and result.exit_code == 2:
        # the course's exported games are exported by the user first (the manifest says how):
        # the only problems are those games missing, each saying how to export it
        assert errors and all(
            "env.id:" in e and "does not exist: export a game to it with `rlcrate godot export" in e
            for e in errors
        ), errors
        assert "rlcrate godot export ballchase --instances" in path.read_text()
        return
    if (data.get("train") or {}).get("init_from") and result.exit_code == 2:
        # a warm start's parent is another bundled manifest's run, not made here: the one
        # problem is that it is missing (every other problem would be listed too)
        parent = data["train"]["init_from"]["run"]
        assert len(errors) == 1 and "train.init_from.run: no finished run" in errors[0]
        assert errors[0].rstrip().endswith("train the parent first)") and parent in errors[0]
        assert (ROOT / "manifests" / f"{Path(parent).name}.yaml").is_file(), "a bundled parent"
        return
    assert result.exit_code == 0, result.output


def test_envs_lists_ids():
    result = runner.invoke(app, ["envs", "gymnasium", "--all"])
    assert result.exit_code == 0
    assert "CartPole-v1" in result.output


def test_doctor_reports_each_backend():
    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in ("gymnasium", "envpool", "godot", "isaaclab", "brax", "CPU"):
        assert name in result.output


def test_console_script_exit_code(write_manifest):
    exe = Path(sys.executable).with_name("rlcrate")
    bad = write_manifest("rlcrate: 1\nname: x\nenv: {backend: gymnasium, id: Nope-v0}\n")
    out = subprocess.run([str(exe), "validate", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: {bad}:3: env.id:")


def test_doctor_suggests_installs_only_for_what_could_run():
    out = rlcrate("doctor", env_extra={"COLUMNS": "1000"})  # one row, one line
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        if "backend isaaclab" in line:  # its own Python 3.12 environment, not a pip extra here
            assert "pip install 'rlcrate[isaaclab]'" not in line


def test_doctor_fits_the_terminal():
    """Its details wrap at the terminal's width (COLUMNS here), never a 330-column table."""
    out = rlcrate("doctor", env_extra={"COLUMNS": "90"})
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 90, out.stdout
    assert "backend gymnasium" in out.stdout and "CPU" in out.stdout


def test_a_fitted_console_without_a_terminal_or_columns_is_100_wide(monkeypatch):
    import io

    from runner.cli.run import FALLBACK_WIDTH, fitted_console

    monkeypatch.delenv("COLUMNS", raising=False)
    for name in ("stdin", "stdout", "stderr"):  # no terminal behind any of them
        monkeypatch.setattr(sys, name, io.StringIO())
    assert fitted_console().width == FALLBACK_WIDTH == 100
    monkeypatch.setenv("COLUMNS", "72")
    assert fitted_console().width == 72


def test_envs_all_is_one_id_per_line():
    out = rlcrate("envs", "gymnasium", "--all")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "CartPole-v1" in lines and all(" " not in line and line for line in lines)


def test_resume_hint_is_one_line_when_not_a_terminal(tmp_path):
    from runner.run.orchestrate import resume_hint

    run_dir = tmp_path / ("a-long-folder-name-" * 6) / "run"
    console_out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from rich.console import Console; "
            "from runner.run.orchestrate import resume_hint; "
            f"resume_hint(Console(width=60), Path({str(run_dir)!r}))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert resume_hint is not None
    expected = f"rlcrate run {run_dir / 'manifest.yaml'} --resume {run_dir}"
    assert expected in console_out.stdout.splitlines(), console_out.stdout


def test_doctor_gives_the_gpu_env_hint_once(tmp_path):
    env = {"RLCRATE_GPU_ENV": str(tmp_path / "no-gpu-env")}
    for name in [k for k in os.environ if k.startswith("RLCRATE_PYTHON_")]:
        env[name] = ""
    res = rlcrate("doctor", env_extra=env)
    assert res.returncode == 0, res.stderr
    assert " ".join(res.stdout.split()).count("make gpu-env") == 1, res.stdout


def test_image_build_help_says_the_first_engine_that_answers():
    res = rlcrate("image", "build", "--help")
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.stdout).split())
    assert res.returncode == 0
    assert "first of them, in that order, that answers here" in text, text
    assert "first one installed" not in text
