"""Options several trainers own, to build a trainer's `Options` from (`AlgoSpec` subclasses):
where its loop computes, and how many threads torch uses."""

from __future__ import annotations

from pydantic import Field

from runner.manifest.algo import AlgoSpec


class OnDevice(AlgoSpec):
    """Options of a loop that runs on a device the manifest chooses."""

    device: str = Field("cpu", min_length=1, description="Device: cpu, cuda, cuda:N or auto.")

    def compute_device(self) -> str:
        return self.device

    def nondeterminism(self) -> str | None:
        if self.device != "cpu":
            return f"algo.device {self.device}: GPU kernels need not repeat"
        return None


class TorchOptions(OnDevice):
    """Options of a loop on torch: its device, and its intra-op threads per unit."""

    device: str = Field("cpu", min_length=1, description="torch device: cpu, cuda, cuda:N or auto.")
    torch_threads: int = Field(
        1, ge=1, description="torch intra-op threads per unit (1 keeps CPU runs bit-exact)."
    )

    def threads(self) -> int:
        return self.torch_threads

    def nondeterminism(self) -> str | None:
        if self.torch_threads != 1 and self.device == "cpu":
            return f"algo.torch_threads {self.torch_threads}: sums in varying order"
        return super().nondeterminism()
