"""The documentation: the README as a landing page, the site built with --strict, every manifest
shown validating, every `rlcrate` command shown existing with its options, and the built site
rendered in a headless Chromium."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, checkout_env, rlcrate

README = ROOT / "README.md"
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
DOCS = [README, *PAGES]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)


def _hook():
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "docs/_hooks/reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    # `make venv` installs the docs extra; the GPU environment (`make test-gpu-env`) holds only
    # the CUDA image's lock, which has no reason to carry MkDocs
    pytest.importorskip("material", reason="MkDocs Material is not installed here (the docs extra)")
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    proc = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=checkout_env(NO_MKDOCS_2_WARNING="1"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


# ---- the README ------------------------------------------------------------------------------


def test_readme_is_a_landing_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    first = text.split("```", 2)[1]  # the first code block: the two commands
    assert "make quickstart" in first and "make test" in first
    make = (ROOT / "Makefile").read_text()
    quickstart = make.split("\nquickstart:", 1)[1].split("\n\n", 1)[0]
    assert "rlcrate run manifests/quickstart.yaml" in quickstart
    assert "pytest" in make.split("\ntest:", 2)[2].split("\n\n", 1)[0]
    assert re.search(r"^make test$", (ROOT / ".ci/run").read_text(), re.M)


def test_readme_names_every_extra():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    text = README.read_text()
    missing = [name for name in extras if f"`{name}`" not in text]
    assert not missing, f"README's list of extras leaves out {missing}"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository(page):
    """README's links go down into the repository; a page's stay inside docs/ (the site), where
    the reference pages exist once generated."""
    inside = ROOT if page == README else ROOT / "docs"
    generated = {ROOT / "docs" / uri for uri in _hook().PAGES}
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            continue
        assert not target.startswith("/"), target
        assert page != README or ".." not in Path(target).parts, target
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(inside), f"{page.name}: {target} leaves {inside}"
        assert path.exists() or path in generated, f"{page.name}: {target} is not there"


# ---- the site --------------------------------------------------------------------------------


def test_site_builds_strict_with_the_generated_reference(site):
    cli = (site / "reference/cli/index.html").read_text()
    for name in _hook().commands():
        assert f"rlcrate {name}".strip() in cli
    fields = (site / "reference/manifest-fields/index.html").read_text()
    for path in ("env.backend", "algo.params", "train.init_from.run", "track.mlflow.uri"):
        assert f"<code>{path}</code>" in fields, path
    assert "Master seeds; one unit each." in fields  # a description, from the schema
    statuses = (site / "reference/exit-status/index.html").read_text()
    assert "ManifestError" in statuses and "130" in statuses
    assert (site / "getting-started/index.html").exists()


def test_every_exit_status_in_use_is_documented():
    from runner import errors
    from runner.cli.exit import STATUSES
    from runner.run.expect import EXIT_EXPECT

    used = {
        t.exit_code
        for t in vars(errors).values()
        if isinstance(t, type) and issubclass(t, errors.RunnerError)
    } | {0, EXIT_EXPECT, 130}
    assert used <= set(STATUSES), used - set(STATUSES)


# ---- what the pages show ---------------------------------------------------------------------


def _manifests() -> list[tuple[str, str]]:
    found = []
    for page in DOCS:
        for i, (lang, body) in enumerate(FENCE.findall(page.read_text())):
            data = yaml.safe_load(body) if lang == "yaml" else None
            if isinstance(data, dict) and "rlcrate" in data:
                found.append((f"{page.relative_to(ROOT)}#{i}", body))
    return found


MANIFESTS = _manifests()


def test_the_docs_show_manifests():
    assert len(MANIFESTS) >= 5, [name for name, _ in MANIFESTS]


@pytest.mark.parametrize("name,body", MANIFESTS, ids=[n for n, _ in MANIFESTS])
def test_every_manifest_shown_validates(tmp_path, name, body):
    path = tmp_path / "m.yaml"
    path.write_text(body)
    proc = rlcrate("validate", str(path), cwd=tmp_path)
    assert proc.returncode == 0, f"{name}: {proc.stderr}"
    assert ": ok (" in proc.stdout


def _command_lines() -> list[tuple[str, str]]:
    """Every `rlcrate ...` shown: shell lines in code blocks, and inline code starting so."""
    found = []
    for page in DOCS:
        text = page.read_text()
        for lang, body in FENCE.findall(text):
            if lang not in ("bash", "sh", "console", ""):
                continue
            for line in body.splitlines():
                line = line.split(" #", 1)[0]
                for m in re.finditer(r"(?:^|[\s;&('])rlcrate\s+([^;&'\n]*)", line):
                    found.append((page.name, m.group(1).split(" | ", 1)[0]))
        prose = FENCE.sub("", text)
        for span in re.findall(r"`rlcrate ([^`]+)`", prose):
            found.append((page.name, span.replace("\\|", "|")))
    return found


COMMANDS = _command_lines()


# Inline code that starts with "rlcrate " but is no command: the source label `validate --show`
# and resolved.yaml give a value rlcrate itself supplied.
NOT_COMMANDS = {"default"}


def _problems(shown: str, known: dict[str, set[str]]) -> list[str]:
    """What is wrong with one command shown; `a|b` in the command's place is each of a and b."""
    words = shown.split()
    if words and "|" in words[0]:
        return [
            p for alt in words[0].split("|") for p in _problems(" ".join([alt, *words[1:]]), known)
        ]
    path: list[str] = []
    while words and " ".join([*path, words[0]]) in known:
        path.append(words.pop(0))
    if not path and words and not words[0].startswith("-"):
        return [f"no command {words[0]!r}"]
    cmd = " ".join(path)
    opts = re.findall(r"(?<![\w.-])(--?[A-Za-z][\w-]*)", " ".join(words))
    return [f"`rlcrate {cmd}` has no {opt}" for opt in opts if opt not in known[cmd]]


def test_every_command_shown_exists_with_its_options():
    known = _hook().commands()
    assert len(COMMANDS) >= 40
    wrong = [
        f"{page}: rlcrate {shown}: {problem}"
        for page, shown in COMMANDS
        if shown not in NOT_COMMANDS
        for problem in _problems(shown, known)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_command_that_does_not_exist_is_caught():
    known = _hook().commands()
    assert _problems("run M --jobs train --no-such-option", known) == [
        "`rlcrate run` has no --no-such-option"
    ]
    assert _problems("trian M", known) == ["no command 'trian'"]
    assert _problems("image build cpu --engine buildah", known) == []
    assert _problems("train|evaluate M", known) == ["no command 'evaluate'"]


# ---- the site in a browser -------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _served(folder: Path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            server.poll()
            assert server.returncode is None, "http.server exited"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run(
        [str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make system-deps)")
@pytest.mark.parametrize(
    "page,heading", [("", "Where to start"), ("guides/manifests/", "Overrides")]
)
def test_the_site_renders_in_chromium(site, tmp_path, page, heading):
    Image = pytest.importorskip("PIL.Image", reason="Pillow (matplotlib's) is not installed here")

    with _served(site) as base:
        dom = _chromium(tmp_path, "--dump-dom", f"{base}/{page}")
        shot = tmp_path / "page.png"
        proc = _chromium(
            tmp_path, f"--screenshot={shot}", "--window-size=1280,900", f"{base}/{page}"
        )
    assert heading in dom.stdout and 'class="md-nav' in dom.stdout, dom.stderr[-2000:]
    assert shot.exists(), proc.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 900)
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50, "the screenshot is (nearly) blank"
