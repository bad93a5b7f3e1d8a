"""Plain `validate`'s checks of an SB3 algorithm block, from SB3's source (no torch, no model):
the policy name against the algorithm's policy registry, each param against the constructor's
annotation, schedules, `policy_kwargs` names and types, and the device's spelling.
"""

from __future__ import annotations

import re
from typing import Any

from runner.errors import did_you_mean
from runner.manifest import schedules
from runner.trainers.sb3 import hyper
from runner.trainers.sb3 import source as sb3_source
from runner.trainers.sb3.algos import ALGOS, RUNNER_ARGS

Issue = tuple[tuple[str, ...], str]  # (field path under algo, message)
DEVICE = re.compile(r"^(cpu|auto|cuda(:\d+)?)$")


def device_issue(device: str) -> str | None:
    if DEVICE.match(device):
        return None
    return f"{device!r} is not a torch device this runner takes; expected cpu, cuda, cuda:N or auto"


def policy_issue(name: str, policy: str) -> tuple[str | None, tuple[str, str] | None]:
    """(problem, the policy's (module, class)); both None when the registry is not readable."""
    module, cls, _ = ALGOS[name]
    aliases = sb3_source.policy_aliases(module, cls)
    if not aliases:
        return None, None
    if policy in aliases:
        return None, aliases[policy]
    hint = did_you_mean(policy, list(aliases))
    return f"{name} has no policy '{policy}'{hint} (known: {', '.join(aliases)})", None


def _param_issues(name: str, params: dict[str, Any]) -> list[Issue]:
    module, cls, _ = ALGOS[name]
    anns = sb3_source.init_annotations(module, cls)
    out: list[Issue] = []
    bad_schedules = {loc[0] for loc, _ in schedules.schedule_issues(params)}
    for loc, msg in schedules.schedule_issues(params):
        out.append((("params", *loc), msg))
    for loc, msg in schedules.range_issues(params):
        if loc[0] not in bad_schedules:  # one line per value
            bad_schedules.add(loc[0])
            out.append((("params", *loc), msg))
    canon = schedules.canonical_params(params)
    for key, value in canon.items():
        if key in RUNNER_ARGS or key in bad_schedules or key == "policy_kwargs" or key not in anns:
            continue  # RUNNER_ARGS and unknown names: algos.check names them
        problem = sb3_source.value_problem(anns[key], value)
        if problem:
            out.append((("params", key), f"{name}'s {key}: {problem}"))
    return out


def sb3_issues(name: str, policy: str, params: dict[str, Any], device: str) -> list[Issue]:
    """Every problem found; a check the source cannot answer is left to `--deep`."""
    if name not in ALGOS:
        return []
    out: list[Issue] = []
    problem = device_issue(device)
    if problem:
        out.append((("device",), problem))
    problem, where = policy_issue(name, policy)
    if problem:
        out.append((("policy",), problem))
    out += _param_issues(name, params)
    if "action_noise" in params:
        problem = hyper.action_noise_issue(params["action_noise"])
        if problem:
            out.append((("params", "action_noise"), problem))
    if "policy_kwargs" in params:
        allowed = sb3_source.policy_args(*where) if where else None
        for loc, msg in hyper.policy_kwargs_issues(params["policy_kwargs"], allowed, policy):
            out.append((("params", *loc), msg))
    return out


def deep_only(name: str, policy: str, params: dict[str, Any]) -> list[str]:
    """What plain validate could not check here (the output says these need `--deep`)."""
    if name not in ALGOS:
        return []
    module, cls, _ = ALGOS[name]
    out = []
    _, where = policy_issue(name, policy)
    if where is None:
        out.append(f"algo.policy '{policy}'")
    elif "policy_kwargs" in params and sb3_source.policy_args(*where) is None:
        out.append("algo.params.policy_kwargs names")
    if not sb3_source.init_annotations(module, cls):
        out.append("algo.params types")
    return out
