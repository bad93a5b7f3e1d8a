"""`rlcrate tune`: an Optuna study over a manifest's `tune.space`, every trial a variant run on
the manifest's seeds (paired) through its executor, in one run directory.

The one package that imports Optuna (`study`, `plots`); the schema of `tune:` is
`runner.manifest.tune`, the records it leaves (`tune.json`, `best.yaml`) are `records`.
"""
