"""Reliability driver: try every bad input and inject every fault, and count.

    .venv/bin/python tests/benchmarks/reliability.py [--no-faults] [--no-archives] [--no-files]
        [--no-red-team] [--json OUT]

Bad inputs (tests/reliability_cases.py) go through the installed console script in a subprocess;
each counts when it gets exactly one `error:` line, exit status 2, no traceback and no run
directory. Faults are the real-run tests of tests/reliability/test_faults.py (signals at each phase,
a unit killed, each run-directory file corrupted, two resumes at once, a full disk); each counts
when its run is survived with nothing lost (the test's assertions). Hostile archives are the refusal
tests of tests/archive/test_archive.py; each counts when it is refused in one line before anything
is extracted. Hostile files are tests/reliability/test_hostile_files.py; each counts when no code in
the file ran. The red team's round five (RED_TEAM_FIVE) counts each of its tests that passes. Prints
the counts and every miss by name.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.reliability.test_bad_inputs import one_clear_line, run_case  # noqa: E402
from tests.reliability_cases import cases  # noqa: E402


def bad_inputs() -> tuple[int, int, dict[str, str]]:
    misses: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        found = cases(Path(tmp) / "in", Path(tmp) / "runs")
        for case in found:
            proc, seconds = run_case(case, timeout=300)
            why = one_clear_line(proc)
            if why is None and (Path(tmp) / "runs").exists():
                why = "a run directory was made"
            if why is not None:
                misses[case.name] = why
            print(f"{'ok  ' if why is None else 'MISS'} {case.name} ({seconds:.1f} s)", flush=True)
    return len(found), len(found) - len(misses), misses


def _junit(*pytest_args: str) -> tuple[int, int, dict[str, str]]:
    """(tests run, passed, {name: why}) of a pytest run, from its JUnit report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *pytest_args,
                f"--junitxml={report}",
            ],
            cwd=ROOT,
            check=False,
        )
        tree = ET.parse(report)
    total, misses = 0, {}
    for case in tree.iter("testcase"):
        total += 1
        found = [case.find(tag) for tag in ("failure", "error", "skipped")]
        bad = next(
            (el for el in found if el is not None), None
        )  # an Element with no children is falsy
        if bad is not None:
            misses[case.get("name", "?")] = (bad.get("message") or bad.tag)[:200]
    return total, total - len(misses), misses


def faults() -> tuple[int, int, dict[str, str]]:
    return _junit(str(ROOT / "tests" / "reliability" / "test_faults.py"))


def hostile_archives() -> tuple[int, int, dict[str, str]]:
    """The refusal tests of tests/archive/test_archive.py: a real run's archive altered one way each
    (checksums, sizes, formats, links, paths, truncation, expansion and listing bombs)."""
    return _junit(str(ROOT / "tests" / "archive" / "test_archive.py"), "-k", "refuse")


def hostile_files() -> tuple[int, int, dict[str, str]]:
    """tests/reliability/test_hostile_files.py: files that carry code (pickles, SB3's
    cloudpickled `data`, torch files with objects, odd zip members) through every command that
    reads them; each counts when no code ran and the command ended cleanly."""
    return _junit(str(ROOT / "tests" / "reliability" / "test_hostile_files.py"))


# The red team's round five: one test (or parametrized family) per finding, through the console
# script; each counts when what it found is one line (or a listed problem), bounded in time, with
# nothing replaced, half-written or left running.
RED_TEAM_FIVE = (
    "tests/reliability/test_output_targets.py",  # export/archive/report targets
    "tests/tune/test_study_records.py",  # a study's records checked against each other
    "tests/run/test_eval_bound.py",  # every evaluation episode bounded
    "tests/tune/test_tune.py::test_an_int_range_of_a_billion_values_is_counted_not_listed",
    "tests/run/test_determinism.py::test_a_damaged_cache_is_never_copied_on",
    "tests/run/test_determinism.py::test_a_cache_folder_that_is_a_file_still_gives_the_verdict",
    "tests/export/test_export.py::test_a_normalized_model_has_its_statistics_folded_in",
    "tests/registry/test_misbehaving_plugins.py",  # plugins and engines that misbehave
    "tests/video/test_video.py::test_a_hung_ffmpeg_fails_the_unit_in_time_and_leaves_no_file",
    "tests/video/test_video.py::test_a_clip_whose_ffmpeg_is_killed_is_not_kept_under_any_name",
    "tests/manifest/test_values_bounded.py::test_a_zoo_expression_past_the_parser_is_one_line",
)  # its env constructors that raise are bad inputs: tests/reliability_cases.py


def red_team_five() -> tuple[int, int, dict[str, str]]:
    return _junit(*(str(ROOT / t) for t in RED_TEAM_FIVE))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-faults", action="store_true", help="bad inputs only (fast)")
    parser.add_argument("--no-archives", action="store_true", help="skip hostile archives")
    parser.add_argument("--no-files", action="store_true", help="skip hostile files")
    parser.add_argument(
        "--no-red-team", action="store_true", help="skip the red team's round-five cases"
    )
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args()
    n_bad, n_clear, bad_miss = bad_inputs()
    result = {"bad_inputs": n_bad, "one_line_exit_2": n_clear, "bad_input_misses": bad_miss}
    if not args.no_faults:
        n_faults, n_survived, fault_miss = faults()
        result.update(faults=n_faults, survived=n_survived, fault_misses=fault_miss)
    if not args.no_archives:
        n_arch, n_refused, arch_miss = hostile_archives()
        result.update(hostile_archives=n_arch, refused=n_refused, archive_misses=arch_miss)
    if not args.no_files:
        n_files, n_safe, file_miss = hostile_files()
        result.update(hostile_files=n_files, no_code_ran=n_safe, file_misses=file_miss)
    if not args.no_red_team:
        n_red, n_held, red_miss = red_team_five()
        result.update(red_team_five=n_red, held=n_held, red_team_misses=red_miss)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
