"""Job `bench`: env-only and training steps/s for every variant x `bench.sweep` point.

`plan` labels the validated sweep points (`runner.checks.sweep`), `measure` measures one
point, `analysis` adds the speed-up / efficiency findings, and `run` runs them in order, writes
bench.json and plots/scaling.png, and prints the table. With `bench.profile`, `profile` times
where each training step goes and `profile_report` adds its table, plot and findings.
"""
