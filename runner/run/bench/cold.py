"""A bench point's cold start: `python -m runner.run.bench.cold IN OUT`, in a fresh process of the
Python its units run in.

It does what a unit does before it trains (the same imports, its seeds and torch's threads), then
the trainer's `first_step`: the env built as its units build it and stepped once. OUT receives
`{"first_step_at": <time.time() right after that step>}` (null when the trainer cannot say),
written atomically; the runner counts from just before it started this process. Exit status 0
when OUT is written; otherwise the last line of stderr says why.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    from runner.manifest.schema import Manifest
    from runner.record.rundir import write_json_atomic
    from runner.record.seeding import derive, seed_everything
    from runner.trainers import trainer_of
    from runner.trainers.abilities import ColdStart

    src, dst = Path(argv[0]), Path(argv[1])
    cfg = Manifest.model_validate(json.loads(src.read_text()))
    seeds, trainer = derive(cfg.seeds[0]), trainer_of(cfg)
    at: dict[str, float] = {}
    try:
        seed_everything(seeds, torch_threads=cfg.algo.threads(), with_torch=trainer.USES_TORCH)
        if isinstance(trainer, ColdStart):
            trainer.first_step(cfg, seeds, lambda: at.setdefault("t", time.time()))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - reported to the bench job as one line
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    write_json_atomic(dst, {"first_step_at": at.get("t")})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
