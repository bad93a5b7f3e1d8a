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
    loss = net(x).sum() * 2
    loss.backward()
    opt.step()
    return loss.detach() + len(opt.state_dict()["param_groups"])

explained = torch._dynamo.explain(f)(torch.ones(2, 3))
out = float(torch.compile(f, backend="eager")(torch.ones(2, 3)))
params = [p.detach().tolist() for p in net.parameters()]
print(json.dumps([explained.graph_count, explained.graph_break_count, out, params]))
"""
# PPO (Adam) and A2C (RMSprop) trained a few updates: the parameters' digest, and whether
# TorchDynamo was imported
TRAIN = """
import hashlib, sys
from stable_baselines3 import A2C, PPO
{defer}
ppo = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
a2c = A2C("MlpPolicy", "CartPole-v1", n_steps=8, seed=0, device="cpu")
ppo.learn(256)
a2c.learn(64)
params = b"".join(p.detach().numpy().tobytes() for m in (ppo, a2c) for p in m.policy.parameters())
print(hashlib.sha256(params).hexdigest(), "torch._dynamo" in sys.modules)
"""


def _python(code: str, lines: int = 1) -> str:
    """The last `lines` lines `code` prints in a fresh Python."""
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=checkout_env(),
        timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return "\n".join(res.stdout.strip().splitlines()[-lines:])


def test_building_and_reloading_models_does_not_import_dynamo():
    assert _python(BUILD.format(defer="")) == "True"  # what torch does by itself
    assert _python(BUILD.format(defer=DEFER)) == "False"


def test_training_steps_without_dynamo_to_the_same_parameters():
    plain_digest, plain_dynamo = _python(TRAIN.format(defer="")).split()
    deferred_digest, deferred_dynamo = _python(TRAIN.format(defer=DEFER)).split()
    assert (plain_dynamo, deferred_dynamo) == ("True", "False")
    assert deferred_digest == plain_digest


def test_a_compiled_caller_gets_torchs_disabled_methods():
    plain = json.loads(_python(COMPILED.format(defer="")))
    resolved = "print(all(s.disabled for s in slots[1:3]))"  # zero_grad, state_dict: called
    # the compiled step went through torch's own _use_grad wrapper (same graphs and breaks)
    check = "\n".join([COMPILED.format(defer=DEFER), SLOTS, resolved])
    deferred, disabled = _python(check, lines=2).splitlines()
    assert disabled == "True"
    assert json.loads(deferred) == plain
