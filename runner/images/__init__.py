"""Build, list and run the versioned images with docker, podman or buildah.

The images themselves are defined by `Dockerfile.<variant>` and `images/<variant>/` in a source
checkout; these modules only assemble engine command lines (pure functions, tested without an
engine) and run them. Nothing heavy is imported here.

`engine`: names, labels and engine queries; `build`: building; `run`: running a command in an
image (with the CUDA driver preflight); `export`: an image as an OCI archive or a .sif; `cli`:
the `rlcrate image` commands.
"""
