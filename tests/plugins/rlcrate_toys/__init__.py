"""rlcrate's test plugins: a package outside `runner/` that adds a trainer (`toy_climb`, entry
point group `rlcrate.trainers`) and a backend (`toy`, group `rlcrate.backends`). tests/plugins is
this package as pip installs it: the modules beside their dist-info folder, whose
entry_points.txt is what `[project.entry-points]` becomes."""
