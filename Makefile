# Two commands on a fresh machine with Python 3.11 and make:
#   make book   build the site into _build/html (strict: a warning fails it)
#   make test   every check: ruff, then pytest (package, book, browser)
# and:  make serve (the built site on http://127.0.0.1:8000), make clean,
#       make pdf (a PDF handout per chapter), make bench (build timings),
#       make bench-toy (the trained toy model).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Stamp of the last install: redone when the requirements or the package metadata change.
INSTALLED := $(VENV)/.installed
PORT ?= 8000

# Kernels inherit the environment: a headless MPLBACKEND would hide every figure.
unexport MPLBACKEND

.PHONY: book test serve clean bench bench-toy pdf

$(INSTALLED): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

# Everything the site is built from: if none of it changed since the last
# successful build, `make book` has nothing to do.
BOOK_INPUTS := $(shell find book src _ext img -type f -not -name '*.pyc' \
	2>/dev/null) _config.yml _toc.yml references.bib requirements.txt pyproject.toml
BUILT := _build/html/.built
# `make book EDITION=student`: the same book without solutions, in its own folder.
EDITION ?= full
STUDENT_BUILT := _build/student/_build/html/.built

book: $(if $(filter student,$(EDITION)),$(STUDENT_BUILT),$(BUILT))

$(STUDENT_BUILT): $(INSTALLED) $(BOOK_INPUTS)
	@mkdir -p $(@D) && touch $@.start
	$(BIN)/python -P -m bookbuild.prefill
	QKV_EDITION=student $(BIN)/jupyter-book build . -W -n --keep-going \
		--path-output _build/student
	@echo "student edition: _build/student/_build/html/index.html"
	@mv $@.start $@

# Chapters not yet in the execution cache run first, in parallel (one per core);
# Sphinx then builds the site from the cache, strictly.
# The stamp gets the time the build *started*: an input edited during the build,
# or right after it, is newer than the stamp and triggers the next build.
$(BUILT): $(INSTALLED) $(BOOK_INPUTS)
	@mkdir -p $(@D) && touch $@.start
	$(BIN)/python -P -m bookbuild.prefill
	$(BIN)/jupyter-book build . -W -n --keep-going
	@mv $@.start $@

test: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest

serve: book
	@echo "Serving _build/html on http://127.0.0.1:$(PORT) (Ctrl-C to stop)"
	$(BIN)/python -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

# One PDF handout per chapter in _build/pdf, printed by headless Chromium.
pdf: book
	$(BIN)/python -m bookbuild.handouts

# Build speed: cold, nothing changed, prose edited, src/qkv edited (minutes).
bench: $(INSTALLED)
	$(BIN)/python -m bookbuild.bench

# The targets of the tiny trained model (chapter "How attention learns").
bench-toy: $(INSTALLED)
	$(BIN)/python -m bookbuild.bench_toy

clean:
	rm -rf _build
