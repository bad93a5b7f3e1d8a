"""The run model: `resolved.yaml`, the manifest with every default filled in and the matrix
expanded into variants, as pydantic models; and the one reader of that file.

A run directory's `resolved.yaml` is the one source of truth for what ran. Every reader (the
runner on `--resume`, `status`, `eval`, `archive`, `reproduce`, each unit) goes through
`read_resolved` (a run directory) or `parse_resolved` (an archive's copy) and then works with
the typed `ResolvedRun`; nothing indexes the file's dict. It is written by `write_resolved`
alone. Like every record it carries `format` and `written_by` (`runner.record.versioned`): an
older format is brought to this one by `FORMAT`'s migrations, a newer one refused in one line.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from runner.errors import RunFileError
from runner.manifest.matrix import expand, override_modes
from runner.manifest.schema import Manifest
from runner.record.rundir import UnitRef, write_text_atomic
from runner.record.versioned import WRITTEN_BY, Format

RESOLVED = "resolved.yaml"
# a variant's config is one point of the matrix (or one trial of a study): it has no matrix, no
# claims, no trackers and no study of its own
NOT_IN_A_VARIANT = {"matrix", "expect", "track", "tune"}
M = TypeVar("M", bound=Manifest)


class ParentUnit(BaseModel):
    """The parent unit one unit of a warm-started variant starts from."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seed: int = Field(description="The parent unit's seed.")
    model_sha256: str = Field(description="SHA-256 of its model.zip when the run started.")
    stats_sha256: str | None = Field(
        None, description="SHA-256 of its normalization statistics; null: it has none."
    )


class Lineage(BaseModel):
    """Where a warm-started variant's units start from (`train.init_from`), pinned when the run
    started: a folder of runs resolved to one run, the variant filled in, every file hashed."""

    model_config = ConfigDict(extra="forbid", strict=True)

    run: str = Field(description="The parent run directory (absolute).")
    run_id: str = Field(description="Its run id.")
    variant: str = Field(description="Its variant the units start from.")
    manifest_sha256: str = Field(description="SHA-256 of its manifest.yaml.")
    resolved_sha256: str = Field(description="SHA-256 of its resolved.yaml.")
    units: dict[str, ParentUnit] = Field(
        description="This variant's seed (as text) -> the parent unit it starts from."
    )


class ResolvedVariant(BaseModel):
    """One variant: its overrides of the manifest, how each was applied, the full config its
    units run with, and (recorded by `run`) the Python they run with."""

    model_config = ConfigDict(extra="forbid", strict=True)

    overrides: dict[str, Any] = Field(description="Dotted manifest path -> value.")
    override_modes: dict[str, Literal["merge", "replace"]] = Field(
        default_factory=dict,
        description="merge: a mapping set over a mapping (other keys kept); replace: the rest.",
    )
    config: Manifest = Field(description="The manifest this variant's units run.")
    interpreter: str | None = Field(
        None, description="The Python its units run with; null: the runner's own."
    )
    parent: Lineage | None = Field(
        None, description="Warm start: the parent units, pinned when the run started."
    )

    @field_serializer("config")
    def _config(self, config: Manifest) -> dict[str, Any]:
        return config.model_dump(mode="json", exclude=NOT_IN_A_VARIANT)

    def unit_config(self, seed: int) -> Manifest:
        """The config unit `seed` runs: a warm start names its pinned parent unit exactly."""
        init = self.config.train.init_from
        if init is None or self.parent is None:
            return self.config
        pinned = init.model_copy(
            update={
                "run": self.parent.run,
                "variant": self.parent.variant,
                "seed": self.parent.units[str(seed)].seed,
            }
        )
        train = self.config.train.model_copy(update={"init_from": pinned})
        return self.config.model_copy(update={"train": train})

    @property
    def python(self) -> str:
        """The interpreter its units run with: the recorded one, else the runner's own."""
        return self.interpreter or sys.executable


class ResolvedRun(Manifest):
    """resolved.yaml: the manifest's own fields, filled in, and its variants."""

    format: Literal[1] = Field(1, description="resolved.yaml's format (`FORMAT`).")
    written_by: str | None = Field(
        WRITTEN_BY, description="The rlcrate that wrote it; null: one from before it said so."
    )

    seeds: list[int] = Field(min_length=1, description="Master seeds; one unit each.")
    variants: dict[str, ResolvedVariant] = Field(
        min_length=1, description="Variant name -> its overrides and config."
    )
    command_line: dict[str, Any] | None = Field(
        None,
        description="What the command line changed: {argv, set, seeds} (`--set`, `--seeds`).",
    )
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="Dotted path -> where a value came from when not the manifest (e.g. "
        "`rl-zoo3 2.9.2 ppo.yml Acrobot-v1`).",
    )

    def units(self) -> list[UnitRef]:
        """Every (variant, seed) unit, variant by variant."""
        return [UnitRef(v, s) for v in self.variants for s in self.seeds]

    def backends(self) -> set[str]:
        return {v.config.env.backend for v in self.variants.values()}

    def pythons(self) -> dict[str, str]:
        """variant -> the interpreter its units run with (recorded, else the runner's own)."""
        return {name: v.python for name, v in self.variants.items()}

    def without_interpreters(self) -> ResolvedRun:
        """As `resolve()` makes it: the interpreters are facts of a machine, not of a manifest,
        the command line is how it was asked for (its --set and --seeds are in the rest), and a
        warm start's pinned parent is what `train.init_from` found when the run started."""
        variants = {
            n: v.model_copy(
                update={"interpreter": None, "parent": None, "config": _unplaced(v.config)}
            )
            for n, v in self.variants.items()
        }
        mine = _unplaced(self)
        return mine.model_copy(
            update={"variants": variants, "command_line": None, "written_by": None}
        )

    def same_run(self, other: ResolvedRun) -> bool:
        """Whether both describe the same experiment: what ran, not the interpreters, the command
        line, where values came from (`sources`, which runs made before it lack) or what the
        variants are called (an older rlcrate named long ones otherwise): the same variants in
        the same order."""
        mine, theirs = self.without_interpreters(), other.without_interpreters()
        if len(mine.variants) == len(theirs.variants):
            renamed = dict(zip(mine.variants, theirs.variants.values(), strict=True))
            theirs = theirs.model_copy(update={"variants": renamed})
        return mine.model_copy(update={"sources": {}}) == theirs.model_copy(update={"sources": {}})

    def dump(self) -> dict[str, Any]:
        """The plain data written to resolved.yaml: its format first, stamped with this
        rlcrate."""
        data = self.model_dump(mode="json", exclude={"format", "written_by"})
        return {"format": FORMAT.current, "written_by": WRITTEN_BY, **data}


def _unplaced(config: M) -> M:
    """`train.init_from` without the folder its parent lay in: where a parent lies is a fact of a
    machine (an archive's parent is unpacked elsewhere); what it was is pinned in `parent`."""
    init = config.train.init_from
    if init is None:
        return config
    train = config.train.model_copy(update={"init_from": init.model_copy(update={"run": "-"})})
    return config.model_copy(update={"train": train})


def resolve(manifest: Manifest) -> ResolvedRun:
    """The manifest with every default filled in and the matrix expanded into variants.

    Each variant records how its overrides were applied: `merge` for a mapping set over a
    mapping (the other keys kept), `replace` for everything else.
    """
    data = manifest.model_dump(mode="json")
    data["variants"] = {
        v.name: {
            "overrides": v.overrides,
            "override_modes": override_modes(manifest, v.overrides),
            "config": v.config.model_dump(mode="json", exclude=NOT_IN_A_VARIANT),
        }
        for v in expand(manifest)
        if v.config is not None
    }
    data["sources"] = dict(manifest._sources)
    # through JSON, as the file holds it (tuples become lists): equal to the model read back
    return ResolvedRun.model_validate(json.loads(json.dumps(data)))


# the env options every backend's config held before each backend owned its own (format 0)
FLAT_ENV_OPTIONS = ("pacing", "speedup", "action_repeat", "timeout", "atari")


def _own_options(config: Any) -> None:
    """A format-0 variant config (or the top level), made format 1's in place: of the flat env
    options every config held, those its backend does not own are removed (they took no effect
    there), and a `parallel.mode` its backend has no such modes for becomes null. Nothing else
    changes: any other key the backend lacks stays, and is refused as damaged."""
    from runner.manifest.schema import env_model

    if not isinstance(config, dict):
        return
    env = config.get("env")
    backend = env.get("backend") if isinstance(env, dict) else None
    model = env_model(backend) if isinstance(env, dict) and isinstance(backend, str) else None
    if model is None or not isinstance(env, dict):
        return
    for key in FLAT_ENV_OPTIONS:
        if key in env and key not in model.model_fields:
            del env[key]
    parallel = config.get("parallel")
    if isinstance(parallel, dict) and parallel.get("mode") not in model.parallel_modes:
        parallel["mode"] = None


# The algo fields every trainer's config held before each trainer owned its options, with the
# value the resolver then wrote for a trainer that had no use for them.
SHARED_ALGO_DEFAULTS: dict[str, Any] = {
    "defaults": None,
    "policy": "MlpPolicy",
    "normalize": None,
    "device": "cpu",
    "torch_threads": 1,
}


def trainer_options_migrated(config: Any) -> None:
    """A config of a resolved.yaml written before each trainer owned its `algo` options holds
    the SB3/torch fields every trainer had (`SHARED_ALGO_DEFAULTS`). A field the config's trainer
    does not own is removed where it holds the value the resolver filled in for every trainer
    (it said nothing); any other value stays, and validation names it (`damaged at ...: the
    brax_ppo trainer has no such option`): what a run recorded is never silently dropped."""
    from runner.errors import UserInputError
    from runner.manifest.algo import algo_model, trainer_of_algo

    algo = config.get("algo") if isinstance(config, dict) else None
    if not isinstance(algo, dict):
        return
    try:
        trainer = trainer_of_algo(algo)
        model = algo_model(trainer) if trainer is not None else None
    except UserInputError:  # a trainer that cannot be imported: validation says so
        return
    if model is None:
        return
    for key, filled in SHARED_ALGO_DEFAULTS.items():
        value = algo.get(key, filled)
        # the fill-in itself (`type`: not true for 1)
        same = value == filled and type(value) is type(filled)
        if key in algo and key not in model.model_fields and same:
            del algo[key]


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1. A resolved.yaml written before records were versioned held, in each
    config, every backend's env options (`FLAT_ENV_OPTIONS`) and a `parallel.mode` whatever its
    backend, and (before each trainer owned its `algo` options) every trainer's SB3/torch
    fields (`SHARED_ALGO_DEFAULTS`): each config keeps its own backend's and its own trainer's
    (`_own_options`, `trainer_options_migrated`), so old runs and archives read as what ran.
    A file written after either change holds nothing either removes."""
    data = copy.deepcopy(data)
    variants = data.get("variants")
    configs = (
        [v.get("config") for v in variants.values() if isinstance(v, dict)]
        if isinstance(variants, dict)
        else []
    )
    for config in [data, *configs]:
        _own_options(config)
        trainer_options_migrated(config)
    return {"format": 1, "written_by": None, **data}


FORMAT = Format(RESOLVED, 1, (from_unversioned,))


def parse_resolved(data: Any, source: str) -> ResolvedRun:
    """The run model of a resolved.yaml's data; `source` names the file in the one-line error."""
    if not isinstance(data, dict):
        found = "nothing" if data is None else f"a {type(data).__name__}"
        raise RunFileError(f"{source}: damaged (expected a mapping with `variants`, found {found})")
    data = FORMAT.upgrade(data, source)
    try:
        return ResolvedRun.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "top level"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        msg = err["msg"].removeprefix("Value error, ")
        raise RunFileError(f"{source}: damaged at {where}: {msg}{more}") from None


def write_resolved(run_dir: Path, res: ResolvedRun) -> None:
    """Write the run's resolved.yaml (atomically): the one writer of the file."""
    from runner.manifest.parse import dump_yaml

    write_text_atomic(run_dir / RESOLVED, dump_yaml(res.dump()))


def read_resolved(run_dir: Path) -> ResolvedRun:
    """The run model of a run directory; RunFileError (exit 2, one line naming the file) when
    it has no resolved.yaml or the file is not one."""
    from runner.manifest.parse import read_yaml

    path = run_dir / RESOLVED
    if not path.is_file():
        raise RunFileError(f"{run_dir}: not a run directory (no {RESOLVED})")
    data, _ = read_yaml(path)
    return parse_resolved(data, str(path))
