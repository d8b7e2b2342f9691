"""The chapter notebooks linked from each page: readable in plain Jupyter (no raw
MyST left) and runnable top to bottom as downloaded (their first cell installs
`qkv`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from bookbuild.toc import lessons
from bookbuild.tools.testing import make_variable

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.book

LESSONS = lessons(ROOT)
MYST_LEFTOVERS = re.compile(r"\{[\w:-]+\}`|```\{|^:::|^\([\w-]+\)=|^\$\$ \(", re.M)


def notebook_path(chapter: str) -> Path:
    return HTML / "_notebooks" / f"{Path(chapter).name}.ipynb"


def test_every_lesson_page_links_its_notebook(built_book):
    assert LESSONS
    for chapter in LESSONS:
        html = (HTML / f"{chapter}.html").read_text(encoding="utf-8")
        href = f"../_notebooks/{Path(chapter).name}.ipynb"
        assert f'href="{href}"' in html, chapter
        assert notebook_path(chapter).is_file(), chapter


def test_notebooks_are_valid_and_plain_markdown(built_book):
    for chapter in LESSONS:
        notebook = nbformat.read(notebook_path(chapter), as_version=4)
        nbformat.validate(notebook)
        markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
        leftovers = [m for text in markdown for m in MYST_LEFTOVERS.findall(text)]
        assert not leftovers, f"{chapter}: raw MyST left: {leftovers[:5]}"
        assert any(c.get("attachments") for c in notebook.cells), f"{chapter}: figures"
        title = re.search(r"^# (.+)$", "\n".join(markdown), re.M)
        assert title, f"{chapter}: no title"


def test_notebooks_hold_no_bookkeeping(built_book):
    """No glue call and no myst_nb import: a notebook needs only qkv to run."""
    for chapter in LESSONS:
        notebook = nbformat.read(notebook_path(chapter), as_version=4)
        code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
        assert "myst_nb" not in code, chapter
        assert not re.search(r"\bglue\w*\(", code), chapter


def test_glued_numbers_are_filled_in(built_book):
    notebook = nbformat.read(notebook_path("book/attention-by-hand"), as_version=4)
    text = " ".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    text = re.sub(r"\s+", " ", text)
    from qkv.examples import six_word_embeddings

    x = six_word_embeddings()
    score = f"{float(x[1] @ x[0]):.4f}"  # the glued score of "Your" for "journey"
    assert re.search(rf"the {re.escape(score)} of equation \(\d+\.\d+\)", text)
    assert "Raschka (2024)" in text  # a citation


# Runs the notebooks named after the working folder: the first alone (its first
# cell installs qkv), then the others two at a time; writes each one, executed,
# to <executed>/<its position>.ipynb, and says how long each took.
RUNNER = """
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

work, executed = sys.argv[1], Path(sys.argv[2])


def run(numbered):
    number, path = numbered
    start = time.perf_counter()
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="fresh",
        resources={"metadata": {"path": work}},
    ).execute()
    nbformat.write(notebook, executed / f"{number}.ipynb")
    return f"{path} {time.perf_counter() - start:.0f} s"


notebooks = list(enumerate(sys.argv[3:]))
print("ran", run(notebooks[0]), flush=True)  # alone: its first cell installs
with ThreadPoolExecutor(max_workers=2) as pool:  # two kernels on two cores
    for done in pool.map(run, notebooks[1:]):
        print("ran", done, flush=True)
"""

# The explorables' chapters, and the call that shows each one.
EXPLORABLES = {
    "attention-by-hand": "attention_by_hand(",
    "scaled-dot-product": "scaled_scores(",
    "masking": "mask_editor(",
    "positions": "rope_offsets(",
}


@pytest.mark.slow
@pytest.mark.release  # a fresh environment, every notebook run again: make release
def test_the_notebooks_run_as_downloaded_in_a_fresh_environment(built_book, tmp_path):
    """Every notebook of the full edition, as downloaded (first cell included),
    top to bottom, in a folder outside the repository, in a fresh venv that
    holds pip, torch (the CPU build, as the Makefile installs it: as on Colab, a
    torch is there), nbclient, ipykernel and the packages qkv depends on (as on
    Colab, most are there; uv puts them in from its cache in seconds), but not
    qkv. The first notebook's first cell installs it as a reader's would
    (what its chapter needs, pinned), from ``QKV_SOURCE``, here a copy of this
    clone (a copy: building the package writes ``build/`` and ``*.egg-info``
    beside it); the others find it there. The student edition's notebooks are
    these minus the solutions: test_the_student_notebooks_need_no_solution
    checks them.

    Against the build's trained results: ``QKV_RESULTS`` names the folder where
    the build's kernels kept what ``qkv.experiments`` trained (same code, same
    arguments, same torch: the same numbers), and the kernels install the build's
    kept versions (``bookbuild.execute.results``, from this clone), so the
    notebooks read those models back instead of training them twice more. The
    build has proved the training runs; this proves that every other cell runs
    with nothing but the package as a reader installs it. In the executed
    notebooks, each explorable's cell gives the widget (text/html) and its
    static figure (image/png)."""
    uv = str(Path(sys.executable).parent / "uv")
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "MPLBACKEND")
    }
    env["OMP_NUM_THREADS"] = "1"
    results = ROOT / "_build" / "results"
    assert any(results.glob("*/*.pt")), "the build kept no trained result"
    env["QKV_RESULTS"] = str(results)

    def run(*command: str) -> str:
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    # --seed: pip, which the first cell runs, as in Colab or a bare Jupyter.
    run(uv, "venv", "--quiet", "--seed", "--python", sys.executable, str(venv))
    # Compiled once at install (seconds): where the environment sets
    # PYTHONDONTWRITEBYTECODE, as this machine's does, every kernel would
    # otherwise compile torch, NumPy and Matplotlib again as it starts.
    torch_from = make_variable(ROOT, "TORCH_FROM").split()
    run(
        uv,
        "pip",
        "install",
        "--quiet",
        "--compile-bytecode",  # see above
        "--python",
        python,
        "--no-deps",  # its dependencies come with the package, as on Colab
        make_variable(ROOT, "TORCH"),
        *torch_from,
    )
    package = tmp_path / "package"  # what QKV_SOURCE names
    shutil.copytree(
        ROOT / "src",
        package / "src",
        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"),
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, package / name)
    run(
        uv,
        "pip",
        "install",
        "--quiet",
        "--compile-bytecode",
        "--python",
        python,
        "nbclient",
        "ipykernel",
        "-r",  # what qkv[notebooks] depends on, not qkv itself
        str(package / "pyproject.toml"),
        "--extra",
        "notebooks",
        "-c",  # at the book's versions, which the first cell pins too
        str(ROOT / "constraints.txt"),
    )
    run(python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "fresh")
    bare = "import importlib.util as u; print(u.find_spec('qkv') is None)"
    assert run(python, "-c", bare).strip() == "True"  # the notebooks install it
    env["QKV_SOURCE"] = str(package)
    # The build's kept results, read back as the book's kernels do: this venv's
    # kernels install bookbuild.execute.results (torch, NumPy and qkv only) from
    # this clone, once qkv is there (the first notebook's kernel starts without).
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(
        "import sys\n"
        f"sys.path.append({str(ROOT / 'bookbuild' / 'src')!r})\n"
        "try:\n"
        "    from bookbuild.execute import results\n"
        "except ImportError:  # qkv not installed yet\n"
        "    pass\n"
        "else:\n"
        "    results.install()\n",
        encoding="utf-8",
    )
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    notebooks = [
        str(HTML / "_notebooks" / f"{Path(chapter).name}.ipynb") for chapter in LESSONS
    ]
    executed = tmp_path / "executed"
    for folder in (tmp_path / "work", executed):
        folder.mkdir()
    start = time.perf_counter()
    output = run(python, "-c", RUNNER, str(tmp_path / "work"), executed, *notebooks)
    print(f"{output}all in {time.perf_counter() - start:.0f} s")  # with -s
    assert output.count("ran ") == len(LESSONS), output
    where = run(python, "-c", "import qkv; print(qkv.__file__)")
    assert "/site-packages/qkv/" in where, where  # installed by the first cell
    first = nbformat.read(executed / "0.ipynb", as_version=4).cells[0]
    assert "QKV_SOURCE" in first.source and "pip_install(" in first.source
    shown = "".join(o.get("text", "") for o in first.outputs)
    # quietly: one line, what it installed and in how long
    assert re.fullmatch(r"Installing qkv\S* with pip… done in \d+ s\.\n", shown), shown
    names = [Path(chapter).name for chapter in LESSONS]  # the full edition's
    for chapter, call in EXPLORABLES.items():
        path = executed / f"{names.index(chapter)}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        cell = next(
            c for c in notebook.cells if c.cell_type == "code" and call in c.source
        )
        outputs = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert outputs and {"text/html", "image/png"} <= set(outputs[0].data), chapter
        assert "qkv-explorable" in outputs[0].data["text/html"]


def bound_and_read(notebook) -> tuple[set[str], set[str]]:
    """The names the notebook's code binds (assignments, imports, functions,
    classes, arguments, loop, with and except targets) and the names it reads."""
    import ast

    bound, read = set(), set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = [
            line
            for line in cell.source.splitlines()
            if not line.lstrip().startswith(("%", "!"))  # IPython magics
        ]
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Name):
                (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                bound.add(node.name)
            elif isinstance(node, ast.arg):  # a function's or a lambda's
                bound.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif isinstance(node, ast.alias):
                bound.add((node.asname or node.name).split(".")[0])
    return bound, read


def test_the_student_notebooks_need_no_solution(built_book, student_site):
    """A student notebook is its full edition's notebook without the solutions
    (which the fresh-environment test runs top to bottom): every code cell of it
    is a cell of the full one, or one with solution lines left out, in the same
    order; and no name it reads is bound only by the solutions (the fault that
    makes a student's "Run all" stop at a NameError)."""
    for chapter in LESSONS:
        name = f"{Path(chapter).name}.ipynb"
        full = nbformat.read(HTML / "_notebooks" / name, as_version=4)
        student = nbformat.read(student_site / "_notebooks" / name, as_version=4)
        full_bound, _ = bound_and_read(full)
        student_bound, student_read = bound_and_read(student)
        only_in_solutions = full_bound - student_bound
        missing = sorted(student_read & only_in_solutions)
        assert not missing, f"{chapter}: read but bound only by a solution: {missing}"
        kept = iter(c.source for c in full.cells if c.cell_type == "code")
        for cell in (c for c in student.cells if c.cell_type == "code"):
            lines = set(cell.source.splitlines())
            assert any(lines <= set(source.splitlines()) for source in kept), (
                chapter,
                cell.source[:200],
            )
