# Versioned images (included by the top-level Makefile). See README "Images".
#
#   make image-cpu                   docker/podman/buildah, whichever is installed
#   make image-cpu IMAGE_ENGINE=buildah IMAGE_FLAGS="$(images/sandbox-flags.sh)"
#   make lock                        regenerate both locks (uv) and their recorded sha256
#
# IMAGE_FLAGS goes to `rlcrate image build`: --base NAME@sha256:..., --build-arg K=V, --volume.

IMAGE_PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
IMAGE_ENGINE ?=
IMAGE_FLAGS ?=
UV ?= $(if $(wildcard .venv/bin/uv),.venv/bin/uv,uv)

.PHONY: image-cpu image-cuda lock lock-cpu lock-cuda

image-cpu image-cuda: image-%:
	$(IMAGE_PYTHON) -m runner image build $* $(if $(IMAGE_ENGINE),--engine $(IMAGE_ENGINE)) $(IMAGE_FLAGS)

lock: lock-cpu lock-cuda

lock-cpu lock-cuda: lock-%:
	UV=$(UV) images/lock.sh $*
