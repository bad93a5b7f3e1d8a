"""SB3's dry construction (the trainer's `dry_construct`): one env of the backend, the model on
it (a warm start's parent loaded into it), one action; every failure at the field it comes from.
"""

from __future__ import annotations

from runner.errors import FieldError, RunnerError, first_line
from runner.manifest.schema import Manifest
from runner.trainers.sb3.options import options


def dry_construct(cfg: Manifest) -> None:
    from runner.record.machine import cpu_count
    from runner.record.seeding import derive, seed_everything
    from runner.trainers.sb3.common import make_env, make_model, one_env
    from runner.trainers.sb3.warm import warm_start
    from runner.trainers.torch_startup import device_problem

    algo = options(cfg)
    problem = device_problem(algo.device)
    if problem:
        raise FieldError(("algo", "device"), problem)
    if algo.torch_threads > 8 * cpu_count():
        raise FieldError(
            ("algo", "torch_threads"),
            f"{algo.torch_threads} threads on {cpu_count()} CPUs is more than torch can start "
            f"here; use at most {cpu_count()}",
        )
    try:
        seed_everything(derive(0), torch_threads=algo.torch_threads)
    except Exception as exc:
        raise FieldError(
            ("algo", "torch_threads"), f"torch refuses it: {first_line(exc)}"
        ) from None
    try:
        venv = make_env(cfg, seed=0, parallel=one_env(cfg, mode=cfg.parallel.mode))
    except FieldError:  # a problem the env places itself (a game's agents per process)
        raise
    except RunnerError as exc:  # rlcrate's own line, whole (e.g. every asset file a task needs)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise FieldError(("env",), f"cannot build the env: {first}") from None
    except Exception as exc:
        raise FieldError(("env",), f"cannot build the env: {first_line(exc)}") from None
    try:
        model = make_model(cfg, venv, seed=0, tb_dir=None)
        if cfg.train.init_from is not None:  # the parent's spaces and network against this one
            warm_start(model, venv, cfg)
        model.predict(venv.reset(), deterministic=True)
    finally:
        venv.close()
