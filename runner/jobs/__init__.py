"""Jobs: functions from a resolved unit to files in its directory (train, evaluate, bench)."""
