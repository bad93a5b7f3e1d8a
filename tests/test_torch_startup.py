"""runner/trainers/torch_startup.py: models built without TorchDynamo's import, and a compiled
caller gets torch's own dynamo-disabled optimizer methods."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import checkout_env

# each test starts torch in fresh Pythons (two, then three with TorchDynamo compiling): seconds
pytestmark = pytest.mark.slow

DEFER = "from runner.trainers.torch_startup import defer_dynamo; defer_dynamo()"
SLOTS = """
from torch.optim import Optimizer
from runner.trainers.torch_startup import METHODS, SLOT
slots = [getattr(getattr(Optimizer, m).__wrapped__, SLOT) for m in METHODS]
"""
BUILD = """
import sys
from stable_baselines3 import PPO, SAC
{defer}
ppo = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, device="cpu")
ppo.policy.optimizer.load_state_dict(ppo.policy.optimizer.state_dict())
ppo.policy.optimizer.zero_grad()
SAC("MlpPolicy", "Pendulum-v1", device="cpu")
print("torch._dynamo" in sys.modules)
"""
COMPILED = """
import json, torch
{defer}
torch.manual_seed(0)
net = torch.nn.Linear(3, 1)
opt = torch.optim.Adam(net.parameters())

def f(x):
    opt.zero_grad()
    return net(x).sum() * 2 + len(opt.state_dict()["param_groups"])

explained = torch._dynamo.explain(f)(torch.ones(2, 3))
out = float(torch.compile(f, backend="eager")(torch.ones(2, 3)))
print(json.dumps([explained.graph_count, explained.graph_break_count, out]))
"""


def _python(code: str) -> str:
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=checkout_env(),
        timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


def test_building_and_reloading_models_does_not_import_dynamo():
    assert _python(BUILD.format(defer="")) == "True"  # what torch does by itself
    assert _python(BUILD.format(defer=DEFER)) == "False"


def test_a_compiled_caller_gets_torchs_disabled_methods():
    plain = json.loads(_python(COMPILED.format(defer="")))
    resolved = "print(all(s.disabled for s in slots[1:3]))"  # zero_grad, state_dict: called
    check = "\n".join([COMPILED.format(defer=DEFER), SLOTS, resolved])
    assert _python(check) == "True"
    deferred = json.loads(_python(COMPILED.format(defer=DEFER)))
    assert deferred == plain
