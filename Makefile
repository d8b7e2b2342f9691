# Two commands on a fresh machine with Python 3.11, 3.12 or 3.13 and make:
#   make book   build the site into _build/html, the French one into
#               _build/html/fr (strict: a warning fails it; a page whose
#               claims did not hold on this machine is left out, and listed;
#               make book CLAIMS=note builds it with a notice after each)
#   make test   every check but the release checks (make release): ruff, the
#               chapters' code, the JavaScript linter, then every test
#               (package, book, browser) that does not build the book again
# and:  make check (the fast tier, after every change: ruff, the chapters' code,
#       the JavaScript linter and every test that builds no book and starts no
#       browser, in about a minute), make release (the release checks, which
#       CI runs after make test: two clean builds compared, the notebooks in a
#       fresh environment, the student edition, the PDFs, the audits of
#       every page in Chromium: minutes),
#       make lint-js (the JavaScript linter),
#       make serve (the built site on http://127.0.0.1:8000), make clean,
#       make pdf (a PDF handout per chapter, without solutions, and each
#       lecture deck; make pdf SOLUTIONS=1: with the solutions),
#       make slides (the lecture decks: every chapter as slides, in each
#       language; make book writes them too), make bench (build timings),
#       make portability (every claim under emulated CPUs),
#       make bench-toy (the trained toy model), make bench-models (the vision
#       and translation models against their targets), make bench-attention
#       (qkv's fast path against PyTorch's), make same-site (two clean
#       builds compared file by file),
#       make translations (refresh the catalogues of locales/ and the packages' own, print their state),
#       make lock (requirements.txt resolved into requirements.lock),
#       make new-chapter NAME=<label> (a chapter that passes every chapter
#       test, from the template, for an author to fill in),
#       make addresses and make notebooks-branch (for the publishing workflow),
#       make print-VARIABLE (a variable's value).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# No --compile-bytecode: it compiles every module of every package (32 s of CPU,
# 16 s of a fresh clone's build); Python writes the bytecode of the modules the
# book imports at their first import instead (measured: a few seconds, once).
UV := $(BIN)/uv --quiet
UV_INSTALL := $(UV) pip install --python $(BIN)/python --no-deps
# Stamp of the last install: redone when the lock or the package metadata change.
INSTALLED := $(VENV)/.installed
PORT ?= 8000

# torch is installed first, alone, as the CPU build: on Linux from PyTorch's CPU
# index (PyPI's Linux wheel is the CUDA build, several GB), elsewhere from PyPI
# (its macOS and Windows wheels are CPU builds). A folder of wheels that pip is
# configured to use (find-links) and that holds this torch is used instead, with
# no index: machines that cannot reach PyTorch's index. For the CUDA build:
#   make book TORCH="torch==2.13.0" TORCH_FROM="--index-url https://download.pytorch.org/whl/cu128"
TORCH_VERSION := 2.13.0
LINUX := $(filter Linux,$(shell uname -s))
TORCH ?= torch==$(TORCH_VERSION)$(if $(LINUX),+cpu)
LOCAL_WHEELS := $(firstword $(PIP_FIND_LINKS) \
	$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
TORCH_FROM ?= $(strip \
	$(if $(wildcard $(LOCAL_WHEELS)/$(subst ==,-,$(TORCH))-*.whl), \
		--no-index --find-links $(LOCAL_WHEELS), \
		$(if $(LINUX),--index-url https://download.pytorch.org/whl/cpu)))

# Kernels inherit the environment: a headless MPLBACKEND would hide every figure.
unexport MPLBACKEND
# Python writes the bytecode it compiles (see UV_INSTALL), even where the
# environment says not to: else every process compiles torch again as it starts.
unexport PYTHONDONTWRITEBYTECODE
# What the site does with a page whose asserts (its claims) failed on this
# machine (bookbuild.execute.claims): left out, the build failing (default), or
# `make book CLAIMS=note`: built, a notice after each such sentence. Only the
# book's own targets see it: `make test` stays strict whatever the shell sets.
CLAIMS ?=
unexport QKV_CLAIMS
# Rewritten when CLAIMS changes (not otherwise): the site is built again.
CLAIMS_MODE := _build/.claims-mode
$(CLAIMS_MODE): FORCE
	@mkdir -p $(@D)
	@echo "$(CLAIMS)" | cmp -s - $@ || echo "$(CLAIMS)" > $@
FORCE:

.PHONY: FORCE environment repair book slides check test release portability lint-js serve clean bench bench-toy bench-attention bench-models pdf new-chapter lock addresses notebooks-branch same-site translations english-words corpus

# Every package at the version of requirements.lock (uv installs them in
# seconds), torch as above, and the book's two packages (qkv, bookbuild) editable.
# Quiet: one line per step; errors still show. pip's -qq also hides the warnings
# it prints about its machine-wide configuration (such as an extra index folder
# that does not exist), which a user cannot act on here.
$(INSTALLED): requirements.lock pyproject.toml bookbuild/pyproject.toml
	@echo "install: $(VENV) with $(TORCH) and the packages of requirements.lock"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -qq --disable-pip-version-check \
		"uv==$$(sed -n 's/^uv==//p' requirements.lock)"
	@$(UV_INSTALL) $(if $(REPAIRING),--reinstall) "$(TORCH)" $(TORCH_FROM)
	@$(UV_INSTALL) -r requirements.lock
	@$(UV_INSTALL) $(if $(REPAIRING),--reinstall) -e . -e ./bookbuild
	@touch $@
	@echo "install: done"

# The stamp sees the lock and the metadata, not a venv that broke after its
# install (torch removed or replaced, qkv installed from another checkout). So
# every build first checks the venv (bookbuild.execute.environment: torch and
# qkv import, at the pinned version, qkv from this checkout; free while nothing
# in the venv changed) and, if it is broken, installs it again, once, then
# checks again: still broken, the build stops on the check's one line.
# A package whose files are gone but whose metadata remains is "installed" to
# uv: the repair reinstalls what the check checks, torch, qkv and bookbuild
# (--reinstall, from uv's cache). The check runs on every `make book`, even
# when no input changed.
REPAIRING ?=
CHECK_ENVIRONMENT = $(BIN)/python -P -m bookbuild.execute.environment --what-only \
	|| { echo "install: the environment is broken: installing it again"; \
	$(MAKE) --no-print-directory repair \
	&& $(BIN)/python -P -m bookbuild.execute.environment; }

# The venv installed again, torch, qkv and bookbuild reinstalled.
repair:
	@rm -f $(INSTALLED)
	@$(MAKE) --no-print-directory $(INSTALLED) REPAIRING=1

environment: $(INSTALLED)
	@$(CHECK_ENVIRONMENT)

# Re-resolve requirements.txt into requirements.lock (after editing it).
lock: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.lock

# For the publishing workflow: the public addresses into _config.yml, and the
# files of the `notebooks` branch (after `make book` and `make book EDITION=student`).
addresses: $(INSTALLED)
	$(BIN)/python -m bookbuild.site.urls --repository "$(REPOSITORY)" --site "$(SITE)"

notebooks-branch: $(INSTALLED)
	$(BIN)/python -m bookbuild.site.notebooks --repository "$(REPOSITORY)"

# Everything the site is built from: if none of it changed since the last
# successful build, `make book` has nothing to do.
# Not what installing writes (*.egg-info) or Python caches.
BOOK_INPUTS := $(shell find book src bookbuild/src img locales -type f -not -name '*.pyc' \
	-not -name '*.mo' -not -path '*.egg-info/*' -not -path '*/__pycache__/*' \
	2>/dev/null) _config.yml _toc.yml references.bib \
	requirements.lock pyproject.toml bookbuild/pyproject.toml
# The list of those inputs, rewritten when it changes: a deleted input (a
# catalogue, a chapter) triggers a build as an edited one does.
INPUTS_LIST := _build/.inputs
$(INPUTS_LIST): FORCE
	@mkdir -p $(@D)
	@printf '%s\n' $(sort $(BOOK_INPUTS)) | cmp -s - $@ \
		|| printf '%s\n' $(sort $(BOOK_INPUTS)) > $@
BUILT := _build/html/.built
# `make book EDITION=student`: the same book without solutions, in its own folder.
EDITION ?= full
STUDENT_BUILT := _build/student/_build/html/.built

book: $(if $(filter student,$(EDITION)),$(STUDENT_BUILT),$(BUILT))

$(BUILT) $(STUDENT_BUILT): export QKV_CLAIMS = $(CLAIMS)
$(STUDENT_BUILT): $(INSTALLED) $(BOOK_INPUTS) $(INPUTS_LIST) $(CLAIMS_MODE) | environment
	@mkdir -p $(@D) && touch $@.start
	@$(BIN)/python -P -m bookbuild.execute.prefill
	@QKV_EDITION=student $(BIN)/python -m bookbuild.build site \
		--path-output _build/student --log-dir _build/logs/student
	@$(BIN)/python -m bookbuild.tools.handouts --edition student --link
	@echo "student edition: _build/student/_build/html/index.html"
	@mv $@.start $@

# Chapters not yet in the execution cache run in parallel (one per core, a
# chapter's languages in one kernel, longest first: bookbuild.execute.prefill);
# then Sphinx builds the site from the cache, strictly (jupyter-book build . -W
# -n --keep-going), and, side by side with it, each translation (locales/) into
# _build/html/<language>, from the same cache (bookbuild.build site
# --with-prefill). A chapter that fails stops the build before Sphinx starts
# (each failure is reported once, where it failed).
# Each build's whole log goes to _build/logs/build-<language>.log; what is printed
# is a summary (time, pages written, warnings per language) and, for a build that
# failed, its warning and error lines, the end of its log and the log's path.
# The stamp gets the time the build *started*: an input edited during the build,
# or right after it, is newer than the stamp and triggers the next build.
# Ctrl-C stops the build within seconds (its kernels shut down, one line
# printed, exit code 130) and keeps nothing half-written: no stamp, no
# unfinished chapter in the cache, no page of the stopped build in the site.
# Then the PDFs of `make pdf` are linked from the pages they were printed from,
# and only while those pages are unchanged (bookbuild.tools.handouts --link):
# a page an edit rebuilt loses its PDF's link until `make pdf` prints it again.
$(BUILT): $(INSTALLED) $(BOOK_INPUTS) $(INPUTS_LIST) $(CLAIMS_MODE) | environment
	@mkdir -p $(@D) && touch $@.start
	@$(BIN)/python -m bookbuild.build site --log-dir _build/logs --with-prefill
	@$(BIN)/python -m bookbuild.tools.handouts --link
	@mv $@.start $@

# For translators: the messages of every page extracted again, merged into
# locales/<language>/LC_MESSAGES/<page>.po (changed ones become fuzzy), and the
# state of each catalogue. `python -m bookbuild.i18n.translations check` is the test.
translations: $(INSTALLED)
	$(BIN)/python -P -m bookbuild.execute.prefill
	$(BIN)/python -m bookbuild.i18n.translations update

# The fast tier, after every change (CONTRIBUTING.md): the linters, then every
# test that builds no book (not even a small one) and starts no browser, on two
# workers. Markers (pyproject.toml): build, browser, slow, book, release;
# release implies book, book implies build.
CHECK_TESTS := not build and not browser and not slow
check: $(INSTALLED) lint-js
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m bookbuild.tools.chapter_code check
	$(BIN)/python -m pytest -m "$(CHECK_TESTS)" -n 2 -q --durations=15

# Every check but the release checks, as CI runs it (.ci/run), before a pull
# request: the linters, the tests that do not need the whole book on two workers
# (the slow ones, the small books and the browser tests of test pages too), then
# the tests of the whole book, in one process (they share one build of the book,
# and parallelise inside themselves where the cores are idle).
test: $(INSTALLED) lint-js
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m bookbuild.tools.chapter_code check
	$(BIN)/python -m pytest -m "not book" -n 2 --dist loadgroup -q --durations=15
	$(BIN)/python -m pytest -m "book and not release" --durations=15

# The release checks (marker release), which CI runs after make test: what
# builds the whole book again or installs an environment. The book built (or
# brought up to date) once, then two clean builds compared (QKV_SAME_SITE=1:
# the same-site check runs here, as in CI), every notebook as downloaded in a
# fresh environment, the student edition (English and French) and its links,
# the PDF handouts, the audits of every page and deck in Chromium; in one
# process, sharing the build.
release: $(INSTALLED)
	QKV_SAME_SITE=1 $(BIN)/python -m pytest -m release --durations=15

serve: book
	@echo "Serving _build/html on http://127.0.0.1:$(PORT) (Ctrl-C to stop)"
	$(BIN)/python -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

# One PDF handout per chapter and the whole book in _build/pdf (French in
# _build/pdf/fr), without solutions, printed by headless Chromium, then linked
# from the site's pages (`make book` alone links none); then each lecture deck,
# one slide a page, in _build/pdf/slides (_build/pdf/fr/slides). SOLUTIONS=1:
# the handouts with the solutions, for the lecturer, into _build/pdf/solutions
# (linked from no page). EDITION=student: from the student edition, into
# _build/pdf/student.
SOLUTIONS ?=
pdf: book
	$(BIN)/python -m bookbuild.tools.handouts $(if $(filter student,$(EDITION)),--edition student) $(if $(SOLUTIONS),--solutions)
	$(BIN)/python -m bookbuild.site.slides print $(if $(filter student,$(EDITION)),--edition student)

# The lecture decks (bookbuild.site.slides): one reveal.js deck per chapter and
# language, assembled from the built pages (no second execution), in
# _build/html/slides/ and _build/html/<language>/slides/. Every build of the
# site writes them (the chapters' "present" links resolve); this target writes
# them again and prints how many slides each deck has. EDITION=student: the
# student edition's decks (no solutions).
slides: book
	$(BIN)/python -m bookbuild.site.slides $(if $(filter student,$(EDITION)),--edition student)

# A new chapter from the template (bookbuild.tools.new_chapter): book/$(NAME).md,
# its place at the end of the last numbered part of _toc.yml (PART="<caption>"
# for another), its French catalogue; TITLE="..." and TITLE_FR="..." name it.
new-chapter: $(INSTALLED)
	@test -n "$(NAME)" || { echo 'usage: make new-chapter NAME=<label> [TITLE="..."]'; exit 2; }
	$(BIN)/python -m bookbuild.tools.new_chapter "$(NAME)" $(if $(TITLE),--title "$(TITLE)") $(if $(TITLE_FR),--title-fr "$(TITLE_FR)") $(if $(PART),--part "$(PART)")

# Build speed: cold, nothing changed, prose edited, src/qkv edited (minutes).
bench: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.bench

# The targets of the tiny trained model (chapter "How attention learns").
bench-toy: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.bench_toy

# The models of "Attention on images" and "Cross-attention" against their targets.
bench-models: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.bench_models

# Every chapter executed again under the native CPU and two emulated ones
# (ATEN_CPU_CAPABILITY=avx2, =default, with MKL's and oneDNN's limits), every
# model trained again, every claim (assert) recorded: fails on a claim that
# fails on one of them, or holds by less than 5 % where the CPU moves it
# (bookbuild.tools.portability; CONTRIBUTING, "Claims about trained runs").
# About 5 minutes per emulated CPU on 2 cores; CI runs it after make test.
portability: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.portability

# Two clean builds in _build/same-site/{a,b}, compared file by file: only the
# pages that show build-time timings may differ (minutes: two cold builds).
same-site: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.same_site

# qkv.MultiHeadAttention's fast path against PyTorch's modules (one thread).
bench-attention: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.bench_attention

# The English words left on the French site, per place (page text, tables,
# outputs, figures), the pages with most and the most frequent words (seconds;
# held to a baseline by tests/site/test_english_words.py).
english-words: book
	$(BIN)/python -m bookbuild.tools.english_words

# The book's prose (English msgid, French msgstr of the lessons' catalogues) as
# the training text of the model of the chapter writing: a snapshot, by hand.
corpus: $(INSTALLED)
	$(BIN)/python -m bookbuild.tools.corpus

clean:
	rm -rf _build

# `make print-TORCH`: the value of a variable (for the tests and for curious users).
print-%:
	@echo $($*)

# The JavaScript linter (ESLint, pinned in package.json and package-lock.json,
# installed into node_modules/ by npm ci when the lock changes): every script of
# the project, which run in the reader's browser. Needs Node.js and npm; the book
# itself does not.
JS_FILES := $(wildcard src/qkv/page/static/*.js bookbuild/src/bookbuild/site/static/*.js \
	bookbuild/src/bookbuild/site/slides_static/*.js)
NODE_INSTALLED := node_modules/.installed

$(NODE_INSTALLED): package-lock.json package.json
	@echo "install: node_modules with the packages of package-lock.json"
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

lint-js: $(NODE_INSTALLED)
	node_modules/.bin/eslint --max-warnings 0 $(JS_FILES)
