"""Warm starts (`train.init_from`): find the parent unit a unit starts from, check it before any
unit runs, and pin it when the run starts.

`locate` turns `train.init_from` into a parent run (a folder of runs: its newest run whose
parent units are done) and variant; `problem` is the one line `validate` prints when the parent
is missing, unfinished or damaged, trains another algorithm, normalizes differently or sees
other spaces; `pin` records the parent run, its manifest's hash and every parent model's
SHA-256 (resolved.yaml `parent`, provenance.json `lineage`); `verify` is the unit's check that
the files it starts from are the ones pinned.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import FieldError, RunFileError
from runner.manifest.resolved import RESOLVED, Lineage, ParentUnit, ResolvedRun, read_resolved
from runner.manifest.schema import InitFrom, Manifest
from runner.record.datafiles import LegacyPickle
from runner.record.rundir import UnitRef, file_sha256, pin_mismatch
from runner.record.status import read_status
from runner.trainers import trainer_name, trainer_of
from runner.trainers.abilities import WarmStarts
from runner.trainers.base import spaces_mismatch
from runner.trainers.resume import check_final

FIELD = ("train", "init_from")


@dataclass(frozen=True)
class Parent:
    """A parent run and the variant units start from."""

    run: Path
    res: ResolvedRun
    variant: str

    @property
    def config(self) -> Manifest:
        return self.res.variants[self.variant].config

    def unit_dir(self, seed: int) -> Path:
        return UnitRef(self.variant, seed).dir(self.run)

    def files(self, seed: int) -> list[Path]:
        """The files a child unit starts from (its trainer says which: the model first)."""
        trainer = trainer_of(self.config)
        names = trainer.start_files(self.config) if isinstance(trainer, WarmStarts) else []
        return [self.unit_dir(seed) / name for name in names]


def parent_seeds(init: InitFrom, seeds: list[int]) -> dict[int, int]:
    """This variant's seed -> the parent unit's seed."""
    return {s: s if init.seed == "same" else int(init.seed) for s in seeds}


def where(run: str, base: Path | None) -> Path:
    """A relative run path: the manifest's folder when it is there, else the working directory."""
    path = Path(run).expanduser()
    if not path.is_absolute() and base is not None and (base / path).exists():
        path = base / path
    return path.resolve()


def _unit_problem(parent: Parent, seed: int) -> str | None:
    unit = parent.unit_dir(seed)
    if seed not in parent.res.seeds:
        return f"{parent.run} has no seed {seed} (its seeds: {parent.res.seeds})"
    state = read_status(unit).state
    if state != "done":
        return (
            f"unit {parent.variant}/seed-{seed} of {parent.run} is {state}, not done "
            f"(finish it with `rlcrate run {parent.run / 'manifest.yaml'} --resume {parent.run}`)"
        )
    for path in parent.files(seed):
        if not path.is_file():
            legacy = path.with_suffix(".pkl")
            if legacy.is_file():  # an older rlcrate's pickle: refused, never read
                return str(LegacyPickle(legacy, "the parent's normalization statistics"))
            return f"{path} is missing: the parent unit's files are incomplete"
        if path.suffix == ".zip" and not _whole_zip(path):
            return f"{path} is damaged (not a whole zip file)"
    try:  # the parent's files as its training left them (train.json's hashes), before any read
        check_final(unit)
    except RunFileError as exc:
        return str(exc)
    return None


def _whole_zip(path: Path) -> bool:
    """Every member readable, and the archive starts at the file's first byte: a truncated
    model.zip may still end in the directory of a zip stored inside it (SB3's policy.pth)."""
    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
            return (
                bool(members)
                and min(m.header_offset for m in members) == 0
                and (z.testzip() is None)
            )
    except (zipfile.BadZipFile, OSError):
        return False


def _variant(init: InitFrom, run: Path, res: ResolvedRun) -> str:
    if init.variant is None:
        if len(res.variants) == 1:
            return next(iter(res.variants))
        raise FieldError(
            (*FIELD, "variant"),
            f"{run} has variants {', '.join(res.variants)}: name one in train.init_from.variant",
        )
    if init.variant not in res.variants:
        raise FieldError(
            (*FIELD, "variant"),
            f"{run} has no variant {init.variant!r} (it has {', '.join(res.variants)})",
        )
    return init.variant


def _runs(path: Path) -> list[Path]:
    """A run directory, or the run directories of a folder of runs, newest first."""
    if (path / RESOLVED).is_file():
        return [path]
    if path.is_dir():
        return sorted((p for p in path.iterdir() if (p / RESOLVED).is_file()), reverse=True)
    return []


def locate(init: InitFrom, seeds: list[int], base: Path | None = None) -> Parent:
    """The parent run and variant whose units `seeds` start from; FieldError (one line) when
    there is none, or when its units are unfinished, missing or damaged."""
    path = where(init.run, base)
    runs = _runs(path)
    if not runs:
        what = "folder" if path.is_dir() else "run directory or folder of runs"
        raise FieldError(
            (*FIELD, "run"),
            f"no finished run at {path} (expected a {what} with {RESOLVED}; train the parent "
            "first)",
        )
    first: str | None = None
    for run in runs:
        try:
            res = read_resolved(run)
        except RunFileError as exc:
            first = first or str(exc)
            continue
        parent = Parent(run, res, _variant(init, run, res))
        found = [_unit_problem(parent, s) for s in parent_seeds(init, seeds).values()]
        problems = [p for p in found if p]
        if not problems:
            return parent
        first = first or problems[0]
    assert first is not None
    more = f" (nor in any of the {len(runs)} runs under {path})" if len(runs) > 1 else ""
    raise FieldError((*FIELD, "run"), first + more)


def problem(cfg: Manifest, seeds: list[int], base: Path | None = None) -> FieldError | None:
    """Why `cfg` cannot start from its `train.init_from`, or None. Needs no training package:
    the spaces are compared when both backends know them without launching an env (the dry
    construction compares the parent model's own spaces with the env's)."""
    from runner.backends import get_backend

    init = cfg.train.init_from
    if init is None:
        return None
    trainer = trainer_of(cfg)
    if not isinstance(trainer, WarmStarts):
        own = f"the {trainer_name(cfg)} trainer cannot start from another run's model"
        return FieldError(FIELD, own)
    try:
        parent = locate(init, seeds, base)
    except FieldError as exc:
        return exc
    theirs = parent.config
    if trainer_name(theirs) != trainer_name(cfg):
        return FieldError(
            FIELD,
            f"the parent was trained by the {trainer_name(theirs)} trainer, this variant by the "
            f"{trainer_name(cfg)} trainer: a warm start continues the same training loop",
        )
    why = trainer.warm_start_problem(theirs, cfg)
    if why is not None:
        return FieldError(FIELD, why)
    mine = get_backend(cfg.env.backend).spaces(cfg.env)
    ours = get_backend(theirs.env.backend).spaces(theirs.env)
    if mine is not None and ours is not None and not _same_spaces(mine, ours):
        return FieldError(FIELD, spaces_mismatch(ours, mine))
    return None


def _same_spaces(a: Any, b: Any) -> bool:
    return bool(a[0] == b[0] and a[1] == b[1])


def pin(cfg: Manifest, seeds: list[int]) -> Lineage | None:
    """The parent units of a warm-started variant, found and hashed (resolved.yaml `parent`)."""
    init = cfg.train.init_from
    if init is None:
        return None
    parent = locate(init, seeds)
    units = {}
    for seed, theirs in parent_seeds(init, seeds).items():
        files = [file_sha256(p) for p in parent.files(theirs)]
        units[str(seed)] = ParentUnit(
            seed=theirs, model_sha256=files[0], stats_sha256=files[1] if len(files) > 1 else None
        )
    return Lineage(
        run=str(parent.run),
        run_id=parent.run.name,
        variant=parent.variant,
        manifest_sha256=file_sha256(parent.run / "manifest.yaml"),
        resolved_sha256=file_sha256(parent.run / RESOLVED),
        units=units,
    )


def verify(lineage: Lineage, seed: int) -> None:
    """The unit's check before it starts from its parent: the files are the ones pinned."""
    unit = lineage.units[str(seed)]
    parent = Parent(Path(lineage.run), read_resolved(Path(lineage.run)), lineage.variant)
    digests = (unit.model_sha256, unit.stats_sha256)
    for path, digest in zip(parent.files(unit.seed), digests, strict=False):
        if digest is None:
            continue
        if now := pin_mismatch(path, digest):
            raise RunFileError(
                f"{path} {now}, not the file pinned when the run started ({digest[:12]}…): the "
                "parent changed; start a new run to warm-start from it as it is now"
            )


def anchor(manifest: Manifest, base: Path) -> Manifest:
    """`train.init_from.run` as an absolute path (relative: to the manifest's folder when the
    run is there, else the working directory), so resolved.yaml says which folder was meant."""
    init = manifest.train.init_from
    if init is None:
        return manifest
    pinned = init.model_copy(update={"run": str(where(init.run, base))})
    return manifest.model_copy(
        update={"train": manifest.train.model_copy(update={"init_from": pinned})}
    )


def pin_all(res: ResolvedRun) -> ResolvedRun:
    """Every warm-started variant's parent units found and hashed (FieldError if one is gone)."""
    for variant in res.variants.values():
        variant.parent = pin(variant.config, res.seeds)
    return res


def dry_parents(res: ResolvedRun) -> dict[str, dict[str, Any]]:
    """variant -> the parent unit its first unit starts from (the dry construction builds that)."""
    return {
        name: init.model_dump()
        for name, v in pin_all(res).variants.items()
        if (init := v.unit_config(res.seeds[0]).train.init_from) is not None
    }
