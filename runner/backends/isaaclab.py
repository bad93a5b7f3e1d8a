"""Isaac Lab tasks: reported by `doctor`; running them is not implemented here yet."""

from runner.backends._unported import Unported

_backend = Unported("isaaclab", module="isaaclab", extra="isaaclab")
available = _backend.available
env_ids = _backend.env_ids
check_env = _backend.check_env
spaces = _backend.spaces
make_vec_env = _backend.make_vec_env
