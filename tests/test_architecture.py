"""ARCHITECTURE.md is the map of the repository: it must stay true, both ways.

Every folder, module, static file and Makefile target it names exists, and every
one that exists is named on it; every path it names exists; the counts it states
are the code's (fixes, patch registry entries, explorables, subpackages); its
table of test folders names the markers each folder's tests carry; and every
test runs in exactly one pytest run of `make test` and `make release`.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")

#: The folders whose files the map lists one by one, in a table of their own.
PACKAGE_FOLDERS = ("src/qkv", "bookbuild/src/bookbuild")
LISTED_SUFFIXES = (".py", ".js", ".css")


def tracked_files() -> list[str]:
    return subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()


def tables() -> dict[str, set[str]]:
    """The map's tables of files: {folder: names in the first column}. A table
    belongs to the folder named in backticks at the end of the line that
    introduces it, such as **The experiments** (`src/qkv/experiments/`)."""
    found: dict[str, set[str]] = {}
    folder = None
    for line in MAP.splitlines():
        heading = re.match(r"^\*\*.*\*\* \(`([^`]+)/`\)", line)
        if heading:
            folder = heading.group(1)
            found[folder] = set()
        elif folder and line.startswith("| `"):
            found[folder].add(re.match(r"^\| `([^`]+)`", line).group(1))
        elif line.startswith("#"):
            folder = None
    return found


def listed_files(folder: str, with_tables: set[str]) -> set[str]:
    """The files of ``folder`` the map must list: modules other than
    ``__init__.py``, scripts and style sheets; a subfolder without a table of
    its own is one row, ``name/``."""
    files = set()
    for path in tracked_files():
        if not path.startswith(f"{folder}/") or not path.endswith(LISTED_SUFFIXES):
            continue
        rest = path[len(folder) + 1 :]
        if "/" not in rest:
            if rest != "__init__.py":
                files.add(rest)
        elif f"{folder}/{rest.split('/', 1)[0]}" not in with_tables:
            files.add(rest.split("/", 1)[0] + "/")
    return files


def test_every_top_level_folder_is_on_the_map():
    folders = {name.split("/", 1)[0] for name in tracked_files() if "/" in name}
    assert {"book", "src", "bookbuild", "tests"} <= folders
    missing = sorted(f for f in folders if f"\n{f}/" not in MAP)
    assert not missing, f"ARCHITECTURE.md does not show {missing}"


def test_every_folder_on_the_map_exists():
    block = MAP.split("```", 2)[1]
    named = re.findall(r"^([\w./-]+/)\s", block, re.M)
    assert len(named) > 10
    missing = [name for name in named if not (ROOT / name).is_dir()]
    assert not missing, f"ARCHITECTURE.md shows folders that do not exist: {missing}"


def test_every_file_of_both_packages_is_in_a_table_and_every_row_exists():
    found = tables()
    folders = {
        path.rsplit("/", 1)[0]
        for path in tracked_files()
        if path.startswith(PACKAGE_FOLDERS) and path.endswith(LISTED_SUFFIXES)
    }
    assert "src/qkv" in folders and "bookbuild/src/bookbuild/i18n" in folders
    for folder in sorted(folders):
        assert folder in found, f"ARCHITECTURE.md has no table of {folder}/"
        expected = listed_files(folder, set(found))
        assert found[folder] == expected, (
            f"{folder}/: missing from the map {sorted(expected - found[folder])}, "
            f"on the map but not in the code {sorted(found[folder] - expected)}"
        )
    stale = sorted(set(found) - folders)
    assert not stale, f"ARCHITECTURE.md has tables of folders with no files: {stale}"


def resolves(name: str) -> bool:
    """True if ``name`` is a module, or an attribute of one (``qkv.a.B.c``)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        value = importlib.import_module(module)
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_every_dotted_name_on_the_map_exists():
    dotted = r"(?<![\w/.-])((?:qkv|bookbuild)(?:\.[A-Za-z_]\w*)+)"
    # bookbuild.css and bookbuild.js are files, named as such.
    names = {n for n in re.findall(dotted, MAP) if not n.endswith((".css", ".js"))}
    assert len(names) > 10
    missing = sorted(name for name in names if not resolves(name))
    assert not missing, f"ARCHITECTURE.md names what does not exist: {missing}"


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z0-9-]*):(?!=)", text, re.M))


def test_every_makefile_target_is_on_the_map_and_every_one_named_exists():
    targets = makefile_targets()
    assert {"book", "test", "check"} <= targets
    named = set(re.findall(r"`make ([a-z][a-z0-9-]*)", MAP))
    assert targets - named == set(), f"not on the map: {sorted(targets - named)}"
    assert named - targets == set(), f"not in the Makefile: {sorted(named - targets)}"


def test_the_french_fixes_are_listed_in_the_order_they_load():
    from bookbuild.i18n.languages import FIXES

    rows = re.findall(r"^\| `([a-z_]+)\.py` \| fix (\d+):", MAP, re.M)
    assert [int(number) for _, number in rows] == list(range(1, len(rows) + 1))
    assert [f"bookbuild.i18n.{name}" for name, _ in rows] == list(FIXES)


def test_what_points_at_this_page_finds_what_it_names():
    """_config.yml sends its reader to a section of this page: it exists."""
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    for section in re.findall(r"Read the (\w+) of ARCHITECTURE\.md", config):
        assert f"\n## {section}\n" in MAP, section


def test_nothing_edits_sys_path():
    offenders = []
    for path in [*ROOT.glob("src/**/*.py"), *ROOT.glob("bookbuild/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        if "sys.path." in text.replace('"sys.path."', ""):
            offenders.append(str(path.relative_to(ROOT)))
    for path in ROOT.glob("tests/**/*.py"):
        if path.name == Path(__file__).name:
            continue
        if "sys.path.insert" in path.read_text(encoding="utf-8"):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


def test_the_version_is_written_once():
    """src/qkv/__init__.py holds it; pyproject reads it; CITATION.cff repeats it
    for citation tools, and this test keeps the copy equal."""
    from importlib.metadata import version

    import qkv

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert not re.search(r"^version\s*=\s*\"", pyproject, re.M), "pyproject types it"
    assert version("qkv") == qkv.__version__
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(qkv.__version__)}$", citation, re.M)


def test_the_qkv_distribution_leaves_the_build_wing_out():
    """A reader's `pip install qkv` gets no Sphinx-dependent code."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == ["qkv*"]
    wing = tomllib.loads(
        (ROOT / "bookbuild" / "pyproject.toml").read_text(encoding="utf-8")
    )
    assert wing["project"]["name"] == "bookbuild"


#: The markers of pyproject.toml, and what each implies (tests/conftest.py).
IMPLIES = {"release": "book", "book": "build"}


def pytest_runs(target: str) -> list[str]:
    """The ``-m`` expressions of the pytest runs of a Makefile target, with
    the Makefile's variables (``$(CHECK_TESTS)``) put in."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^([A-Z_]+) := (.*)$", text, re.M))
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M).group(1)
    runs = [run.strip('"') for run in re.findall(r'pytest -m ("[^"]+"|\S+)', recipe)]
    return [
        re.sub(r"\$\((\w+)\)", lambda m: variables[m.group(1)], run) for run in runs
    ]


def marker_sets() -> list[dict[str, bool]]:
    """Every set of markers a test can carry, the implications respected."""
    import itertools
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = [
        m.split(":")[0] for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]
    ]
    assert set(IMPLIES) | set(IMPLIES.values()) <= set(names)
    found = []
    for values in itertools.product([False, True], repeat=len(names)):
        marks = dict(zip(names, values, strict=True))
        if all(marks[b] or not marks[a] for a, b in IMPLIES.items()):
            found.append(marks)
    return found


def test_every_test_runs_once_in_ci_and_make_check_is_part_of_make_test():
    """Whatever its markers, a test runs in exactly one of `make test`'s two
    pytest runs and `make release`'s; `.ci/run` runs both targets; every test
    of `make check` is in `make test`, and none of `make test` is a release check."""
    check, (first, second), (release,) = (
        pytest_runs("check"),
        pytest_runs("test"),
        pytest_runs("release"),
    )
    assert len(check) == 1 and release == "release"
    for marks in marker_sets():
        chosen = [eval(run, {}, dict(marks)) for run in (first, second, release)]
        assert sum(chosen) == 1, (marks, chosen)
        if eval(check[0], {}, dict(marks)):
            assert chosen[0], marks
        if marks["release"]:
            assert chosen == [False, False, True], marks
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.M) and re.search(
        r"^make release$", ci, re.M
    )


#: Suffixes of the file names the map writes in backticks.
FILE_SUFFIXES = (".py", ".md", ".yml", ".toml", ".txt", ".lock", ".js", ".mjs")
FILE_SUFFIXES += (".css", ".json", ".cff", ".bib", ".po", ".pot")


#: Names in backticks that are not paths of the repository: a MIME type, a
#: folder of the built site, the generated conf.py the map says is not used.
NOT_PATHS = {"text/plain", "_static/mathjax", "conf.py"}


def named_paths() -> set[str]:
    """Every path the map writes: the first column of its tree, and every name
    in backticks that is a path (has a ``/``) or a file name (one of
    FILE_SUFFIXES); not the build's outputs (``_build/``), placeholders
    (``<label>``, ``{en,fr}``) or dotted module names."""
    block = MAP.split("```", 2)[1]
    found = set()
    for line in block.strip().splitlines():
        if re.fullmatch(r"[\w.-]+(, [\w.-]+)+", line.strip()):  # README.md, ...
            found |= {name.strip() for name in line.split(",")}
        else:
            found.add(line.split()[0])
    for name in re.findall(r"`([^`\s]+)`", MAP):
        name = name.split("::", 1)[0]
        if (
            name in NOT_PATHS
            or name.startswith(("_build", ".po"))
            or re.search(r"[<>{}*$(=:]", name)
        ):
            continue
        if "/" in name or name.endswith(FILE_SUFFIXES):
            found.add(name)
    return found


def test_every_path_on_the_map_exists():
    """A path is read from the repository's root; a shorter one (``prose/en.txt``,
    ``static/search.js``, a table's ``toc.py``) must end a tracked file's path."""
    tracked = tracked_files()
    names = named_paths()
    assert {".ci/run", "tests/qkv/", "Makefile"} <= names, sorted(names)
    missing = []
    for name in sorted(names):
        bare = name.rstrip("/")
        if (ROOT / bare).exists():
            continue
        if any(path == bare or path.endswith("/" + bare) for path in tracked):
            continue
        if name.endswith("/") and any(f"/{bare}/" in f"/{path}" for path in tracked):
            continue
        missing.append(name)
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


NUMBERS = "one two three four five six seven eight nine ten eleven twelve".split()


def stated(pattern: str) -> int:
    """The number (a word, 'Ten' or 'seven') that ``pattern``'s group finds
    in the map; the test fails if the map no longer says it."""
    found = re.search(pattern, MAP)
    assert found, f"ARCHITECTURE.md no longer says {pattern!r}: update this test"
    return NUMBERS.index(found.group(1).lower()) + 1


def test_the_counts_on_the_map_are_the_codes():
    import qkv.page.explorables as explorables
    from bookbuild import patches
    from bookbuild.i18n.languages import FIXES

    assert stated(r"\*(\w+) fixes, in order\*") == len(FIXES)
    assert stated(r"(\w+) entries of\s+`bookbuild\.patches\.REGISTRY`") == len(
        patches.REGISTRY
    )
    entry_points = [
        name
        for name in explorables.__all__
        if callable(getattr(explorables, name)) and name != "seeded_normal"
    ]
    assert stated(r"exports the (\w+)\s+and `seeded_normal`") == len(entry_points)
    subpackages = {
        path.parent.name
        for path in (ROOT / "bookbuild" / "src" / "bookbuild").glob("*/__init__.py")
    }
    assert stated(r"\*\*Shared by all (\w+)\*\*") == len(subpackages)


def fixture_sets() -> dict[str, set[str]]:
    """The sets of fixtures of tests/conftest.py that set a marker."""
    import ast

    text = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    return {
        name: ast.literal_eval(value)
        for name, value in re.findall(r"^(\w+_FIXTURES) = (\{.*\})$", text, re.M)
    }


def markers_in(files: list[Path]) -> set[str]:
    fixtures = fixture_sets()
    found = set()
    for path in files:
        text = path.read_text(encoding="utf-8")
        found |= set(
            re.findall(r"pytest\.mark\.(build|book|release|browser|slow)\b", text)
        )
        words = set(re.findall(r"\w+", text))
        if words & fixtures["BUILD_FIXTURES"] or "build_book" in words:
            found.add("build")
        if words & fixtures["WHOLE_BOOK_FIXTURES"]:
            found.add("book")
        if words & fixtures["RELEASE_FIXTURES"]:
            found.add("release")
    if "release" in found:
        found.add("book")
    if "book" in found:
        found.add("build")
    return found


def test_the_tiers_table_names_the_markers_each_test_folder_holds():
    """Read from the files, not collected (collecting every test takes a
    minute): a marker written by hand (``pytest.mark.X``); ``build``, ``book``
    and ``release`` also from the fixtures a test names (tests/conftest.py), and
    from one another (release implies book, book implies build)."""
    section = MAP.split("## Tests in tiers", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(tests/[\w/]*)` \| [^|]+ \| ([^|]+) \|$", section, re.M)
    assert {folder for folder, _ in rows} == {
        "tests/",
        "tests/qkv/",
        "tests/bookbuild/",
        "tests/site/",
    }
    for folder, cell in rows:
        named = set(re.findall(r"`(build|book|release|browser|slow)`", cell))
        if "book" in named:
            named.add("build")  # "sets build", said or not
        here = ROOT / folder
        files = sorted(here.glob("test_*.py"))
        if folder == "tests/":
            files = [f for f in files if f.name != Path(__file__).name]
        else:
            files = sorted(here.rglob("test_*.py"))
        assert named == markers_in(files), (
            folder,
            sorted(named),
            sorted(markers_in(files)),
        )
