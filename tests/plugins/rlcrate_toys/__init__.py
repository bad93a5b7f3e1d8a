"""rlcrate's test plugins: a package outside `runner/` that adds a trainer through the
`rlcrate.trainers` entry point (tests/plugins is this package as pip installs it: the module
beside its dist-info folder, whose entry_points.txt is what `[project.entry-points]` becomes)."""
