"""`rlcrate reproduce FILE`: verify, diff the environment, rerun all units or a sample, compare
per unit and per variant, re-check `expect:`, and end with one verdict line.

Only after the whole archive verified is anything written: the archived manifest, into a
temporary folder removed on exit (Ctrl-C included), and the rerun's own run directory under
`--out`, whose `reproduce.json` is written last and atomically.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.archive.parents import unpacked_parent
from runner.archive.results import (
    RerunFailed,
    archived_eval,
    archived_provenance,
    check_archived_results,
    rerun_problem,
)
from runner.archive.study import as_matrix, only, pick_trials, same_study, study_of
from runner.archive.verdict import (
    IDENTICAL,
    TEST_NAME,
    WITHIN,
    VariantResult,
    judge,
    overall,
    unit_result,
)
from runner.archive.verify import Verified, verify
from runner.errors import ManifestError, Problem, UnitFailed, UserInputError
from runner.executors import Chosen, choose
from runner.manifest.overrides import apply as apply_overrides
from runner.manifest.overrides import from_record
from runner.manifest.parse import dump_yaml, parse_yaml
from runner.manifest.resolved import ResolvedRun, parse_resolved
from runner.provenance import envdiff
from runner.record.eval import read_eval
from runner.record.provenance import read_provenance
from runner.record.reproduce import (
    EnvironmentRow,
    ReproduceRecord,
    UnitComparison,
    VariantComparison,
    write_reproduce,
)
from runner.record.summary import read_summary


@dataclass
class ReproduceOptions:
    out: Path = Path("runs")
    executor: Chosen = field(default_factory=choose)
    units: int | None = None
    seeds: list[int] | None = None
    image: str | None = None
    alpha: float = 0.05
    trials: int | None = None  # a study's archive: rerun its N best complete trials (default 1)


def _done_seeds(v: Verified, res: ResolvedRun) -> list[int]:
    not_done = set((v.index.get("run") or {}).get("not_done") or {})
    return [
        s
        for s in res.seeds
        if all(f"{var}/seed-{s}" not in not_done for var in res.variants)
        and all(f"units/{var}/seed-{s}/eval.json" in v.files for var in res.variants)
    ]


def pick_seeds(v: Verified, res: ResolvedRun, opts: ReproduceOptions) -> list[int]:
    """The seeds to rerun: every variant of each, so comparisons stay paired."""
    done = _done_seeds(v, res)
    if not done:
        raise UserInputError(f"{v.path}: the archived run has no seed whose units all finished")
    if opts.seeds:
        bad = [s for s in opts.seeds if s not in done]
        if bad:
            raise UserInputError(
                f"--seeds: seed {bad[0]} is not a finished seed of the archived run "
                f"(finished: {', '.join(map(str, done))})"
            )
        return list(opts.seeds)
    if opts.units:
        return done[: math.ceil(opts.units / len(res.variants))]
    return done


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_evals(v: Verified, res: ResolvedRun, seeds: list[int]) -> None:
    """The archived eval results to compare with, each read before anything runs: an object
    with a numeric `mean` and a list of `episodes`, each with a numeric `return`."""
    for unit in res.units():
        if unit.seed not in seeds:
            continue
        name = f"units/{unit.key}/eval.json"
        try:
            ev = v.json(name)
        except ValueError:
            ev = None
        episodes = ev.get("episodes") if isinstance(ev, dict) else None
        ok = (
            isinstance(ev, dict)
            and _number(ev.get("mean"))
            and isinstance(episodes, list)
            and all(isinstance(e, dict) and _number(e.get("return")) for e in episodes)
        )
        if not ok:
            raise UserInputError(
                f"{v.path}:{name}: damaged (expected {{mean: number, episodes: [{{return: "
                "number}, ...]}); nothing was rerun"
            )


def _check_manifest(v: Verified, res: ResolvedRun, tmp: Path, study: bool) -> bool:
    """The archived manifest.yaml must resolve to the archived resolved.yaml (a study's: but
    for its variants, the trials, which the rerun builds from the manifest). True when it names
    the variants otherwise (an older rlcrate's automatic names): the rerun keeps the archived
    names."""
    from runner.checks.load import load_manifest
    from runner.manifest import resolved

    path = tmp / "manifest.yaml"
    path.write_bytes(v.files["manifest.yaml"])
    # the interpreter each variant ran with is a fact of the run's machine, not of the manifest
    overrides = from_record(res.command_line)  # the run's --set and --seeds
    # unchecked: a warm start's parent lies on the run's machine, not here (it is unpacked
    # from the archive for the rerun, which checks it)
    here = resolved(load_manifest(path, check=False, overrides=overrides))
    if not (same_study(res, here) if study else res.same_run(here)):
        raise UserInputError(
            f"{v.path}: refused, its manifest.yaml does not resolve to its resolved.yaml "
            "(edited after the run, or another rlcrate version); nothing was rerun"
        )
    return not study and list(here.variants) != list(res.variants)


def _derived_manifest(
    v: Verified,
    res: ResolvedRun,
    seeds: list[int],
    tmp: Path,
    parent: Path | None,
    named: list[str] | None,
) -> Path:
    """The archived manifest with the run's --set and --seeds applied, these seeds, no
    tracking (a rerun to compare is not an experiment to log in someone's tracking server), and
    a warm start's parent read from where the archive's copy was unpacked; the `named` variants
    (a study's chosen trials, or every variant of a run named otherwise by the rlcrate that
    made it) as a list matrix under their archived names, a tune: section dropped."""
    text = v.files["manifest.yaml"].decode("utf-8", "replace")
    data = parse_yaml(text, f"{v.path}:manifest.yaml")[0]
    data = apply_overrides(data, from_record(res.command_line))
    data["seeds"] = seeds
    data.pop("track", None)
    if named is not None:
        data.pop("tune", None)
        data["matrix"] = as_matrix(res, named)
    init = (data.get("train") or {}).get("init_from")
    if parent is not None:
        if not isinstance(init, dict):
            raise UserInputError(
                f"{v.path}: its warm start is not declared in train.init_from (a matrix "
                "variant's?); reproduce reruns a warm start declared there"
            )
        init["run"] = str(parent)
    path = tmp / "rerun" / f"{res.name}.yaml"
    path.parent.mkdir()
    path.write_text(dump_yaml(data), encoding="utf-8")
    return path


def _as_archived(exc: ManifestError, tmp: Path, archive_file: Path) -> ManifestError:
    """The rerun's problems, named as the archive's manifest.yaml, without the derived file's
    line numbers (they are not the archived file's)."""
    name = f"{archive_file}:manifest.yaml"
    return ManifestError(
        [Problem(name, 0, p.path, p.message) if Path(p.file).is_relative_to(tmp) else p
         for p in exc.problems]
    )  # fmt: skip


def _rerun(manifest: Path, name: str, opts: ReproduceOptions, console: Console) -> Path:
    from runner.run.orchestrate import RunOptions, run

    before = set((opts.out / name).glob("*")) if (opts.out / name).is_dir() else set()
    if opts.image is None:
        try:
            return run(
                manifest,
                RunOptions(["train", "eval"], opts.executor, opts.out, report=False),
                console,
            )
        except UnitFailed:  # said once, by the RerunFailed that follows
            return _newest(opts.out / name, before)
    from runner.images.run import run_in_image

    run_in_image(
        manifest,
        opts.image,
        opts.out,
        ["--jobs", "train,eval", "--executor", opts.executor.name, "--no-expect"],
    )
    return _newest(opts.out / name, before)


def image_line(image: str, archived: dict) -> str:
    """Whether the image a rerun goes into is the one the archived run ran in, by digest."""
    from runner.images.engine import detect_engine, image_ref, inspect

    ref = image_ref(image)[1]
    info = inspect(engine := detect_engine(), ref)
    if info is None:
        raise UserInputError(f"--image {image}: {engine} has no image {ref}; build or pull it")
    was = (archived.get("image") or {}).get("digest")
    here = info.digest or info.id
    if not was:
        return f"image: {ref} ({here[:19]}); the archived run ran in no image, so none to compare"
    if was in (info.digest, info.id):
        return f"image: {ref} has the archived digest {was[:19]}"
    return f"image: {ref} is {here[:19]}, not the archived {was[:19]}: a different build"


def _newest(parent: Path, before: set[Path]) -> Path:
    new = sorted(p for p in parent.glob("*") if p not in before and p.is_dir())
    if not new:
        raise UserInputError(f"the rerun left no run directory under {parent}")
    return new[-1]


def compare(
    v: Verified,
    res: ResolvedRun,
    seeds: list[int],
    run_dir: Path,
    alpha: float,
    same_env: bool,
) -> list[VariantResult]:
    from runner.provenance.determinism import level

    recorded = archived_provenance(v).determinism
    per_test = alpha / len(res.variants)
    out = []
    for name, variant in res.variants.items():
        lvl, why = level(variant.config, recorded)
        vr = VariantResult(name, lvl, why)
        old_eps: list[float] = []
        new_eps: list[float] = []
        for seed in seeds:
            key = f"units/{name}/seed-{seed}"
            old = archived_eval(v, f"{name}/seed-{seed}")
            new = read_eval(run_dir / key / "eval.json")  # the episodes, never a bare mean
            vr.units.append(unit_result(f"{name}/seed-{seed}", seed, old, new))
            old_eps += old.returns() if old else []
            new_eps += new.returns() if new else []
        judge(vr, old_eps, new_eps, per_test, same_env)
        out.append(vr)
    return out


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def units_table(results: list[VariantResult]) -> Table:
    table = Table(title="reproduction, per unit (eval mean return)")
    for col in ("unit", "archived", "rerun", "rerun - archived", "returns identical"):
        table.add_column(col)
    for vr in results:
        for u in vr.units:
            table.add_row(
                u.key, _fmt(u.archived), _fmt(u.rerun), _fmt(u.diff), "yes" if u.identical else "no"
            )
    return table


def print_env(console: Console, rows: list[envdiff.Row]) -> None:
    same = ", ".join(r.what for r in rows if r.same)
    console.print(f"environment, same as archived: {escape(same)}")
    differ = [r for r in rows if not r.same]
    if not differ:
        return
    table = Table(title="environment: what differs from the archived run")
    for col in ("what", "archived", "here"):
        table.add_column(col)
    for r in differ:
        table.add_row(r.what, r.archived, r.here)
    console.print(table)


def expect_lines(run_dir: Path) -> list[str]:
    """One line per `expect:` claim of the rerun that does not hold."""
    from runner.run.expect import unmet

    return unmet(read_summary(run_dir))


def _verdict_line(
    results: list[VariantResult],
    unmet_lines: list[str],
    n_units: int,
    alpha: float,
    claims: int,
    differ: list[str] | None = None,
) -> tuple[str, bool]:
    """The last line; `expect:` is in it only when the manifest makes claims (`claims`); when
    outcomes are not identical, what of the environment differs from the archived run's
    (`differ`: the environment table's names; a bitwise repeat holds on one machine and image)."""
    verdict = overall(results)
    tested = [r for r in results if r.p_value is not None]
    how = (
        f"{TEST_NAME}, alpha {alpha:g} over {len(results)} variant(s)"
        if tested
        else "eval returns compared exactly"
    )
    said = f"expect: {len(unmet_lines)} not met" if unmet_lines else "expect: met"
    ok = verdict in (IDENTICAL, WITHIN) and not unmet_lines
    tail = f"; {said}" if claims else ""
    if verdict != IDENTICAL:
        tail += (
            f"; differs from the archived run's: {', '.join(differ)}"
            if differ
            else ("; nothing of the environment differs")
        )
    return f"verdict: {verdict} ({n_units} unit(s) rerun; {how}{tail})", ok


def _environment(v: Verified, res: ResolvedRun, run_dir: Path) -> list[envdiff.Row]:
    """Archived vs rerun environment, from the rerun's own provenance (inside an image, that
    is the image's), else from this process."""
    from runner.archive.pack import game_hashes

    prov = read_provenance(run_dir)
    here = prov.model_dump(mode="json") if prov is not None else envdiff.current(res.backends())
    archived = archived_provenance(v).model_dump(mode="json", exclude_unset=True)
    return envdiff.diff(archived, here, v.index.get("game"), game_hashes(res))


def _check_rerun(
    archive_file: Path, v: Verified, res: ResolvedRun, seeds: list[int], run_dir: Path
) -> None:
    """A rerun that did not finish gives no verdict: say why, in reproduce.json if it fits."""
    problem = rerun_problem(run_dir, res, seeds)
    if problem is None:
        return
    line = f"no verdict: the rerun could not run to the end ({problem}); nothing was compared"
    with contextlib.suppress(OSError):  # the disk may be what is full
        write_reproduce(
            run_dir,
            ReproduceRecord(archive=str(archive_file.resolve()), archived_run=v.top, seeds=seeds,
                            verdict=None, holds=False, line=line),
        )  # fmt: skip
    raise RerunFailed(line)


def reproduce(archive_file: Path, opts: ReproduceOptions, console: Console) -> bool:
    """Verify, rerun, compare; print the tables and one verdict line; True when it holds."""
    v = verify(archive_file)
    if "resolved.yaml" not in v.files:
        raise UserInputError(f"{archive_file}: the archive holds no resolved.yaml")
    res = parse_resolved(v.yaml("resolved.yaml"), f"{archive_file}:resolved.yaml")
    check_archived_results(v, res)
    archived_provenance(v)  # its determinism checks set the verdict's level: refused if damaged
    whole, trials = res, None
    study = study_of(v, res)
    if study is not None:
        trials = pick_trials(v, study, res, opts.trials)
        res = only(res, trials)
    elif opts.trials is not None:
        raise UserInputError(f"--trials: {archive_file} is not a study's run (rlcrate tune)")
    seeds = pick_seeds(v, res, opts)
    check_evals(v, res, seeds)
    console.print(
        f"verified: {archive_file} ({len(v.sums) + 1} files, SHA-256 all match; "
        f"{v.index.get('written_by')}, run {v.top})"
    )
    if opts.image is not None:
        line = image_line(opts.image, archived_provenance(v).model_dump(mode="json"))
        console.print(escape(line), soft_wrap=True)
    if study is not None and trials is not None:
        console.print(
            f"study: rerunning {', '.join(trials)}, the best of its "
            f"{sum(t.state == 'complete' for t in study.trials)} complete trial(s) by "
            f"{study.study.stat} of {study.study.metric}; the search itself is not rerun",
            soft_wrap=True,
        )
    with tempfile.TemporaryDirectory(prefix="rlcrate-reproduce-") as tmp:
        renamed = _check_manifest(v, whole, Path(tmp), study is not None)
        named = list(res.variants) if renamed else trials
        try:
            with unpacked_parent(v, res, opts.out, opts.out / res.name) as parent:
                manifest = _derived_manifest(v, res, seeds, Path(tmp), parent, named)
                run_dir = _rerun(manifest, res.name, opts, console)
        except ManifestError as exc:  # the rerun's manifest is a temporary file: name the archive's
            raise _as_archived(exc, Path(tmp), archive_file) from None
    _check_rerun(archive_file, v, res, seeds, run_dir)
    rows = _environment(v, res, run_dir)
    print_env(console, rows)
    same_env = envdiff.same_platform(rows)
    results = compare(v, res, seeds, run_dir, opts.alpha, same_env)
    console.print(units_table(results))
    for r in results:
        test = (
            f"; {TEST_NAME}: {r.note}"
            if r.p_value is not None
            else (f"; {r.note}" if r.note else "")
        )
        console.print(
            f"{escape(r.name)}: {r.verdict} (level {r.level}: {escape(r.why)}"
            f"{'' if same_env else '; environment differs'}{escape(test)})",
            soft_wrap=True,
        )
    lines = expect_lines(run_dir)
    for line in lines:
        console.print(escape(line))
    n_units = sum(len(r.units) for r in results)
    from runner.run.expect import n_claims

    claims = n_claims(read_summary(run_dir))
    differ = [r.what for r in rows if not r.same]
    line, ok = _verdict_line(results, lines, n_units, opts.alpha, claims, differ)
    record = ReproduceRecord(
        archive=str(archive_file.resolve()),
        archived_run=v.top,
        seeds=seeds,
        trials=trials,
        environment=[EnvironmentRow(**r.__dict__) for r in rows],
        same_environment=same_env,
        variants=[
            VariantComparison(
                **{**r.__dict__, "units": [UnitComparison(**u.__dict__) for u in r.units]}
            )
            for r in results
        ],
        expect_not_met=lines,
        verdict=overall(results),
        holds=ok,
        line=line,
    )
    write_reproduce(run_dir, record)
    console.print(f"[bold]{escape(line)}[/]", soft_wrap=True)  # one line, whatever the width
    return ok
