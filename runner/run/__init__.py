"""Running a manifest: orchestration, the unit and bench jobs, progress, expectations, resources,
status and the determinism check."""
