# Two commands on a fresh machine: `make reproduce` and `make test`. Each installs what is missing first
# (Debian packages, .venv, pip packages, KenLM's lmplz/build_binary, the seedable eflomal) and is safe to run twice.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
TOOLS := tools
PROFILE ?= tiny
OUT ?=
WORKERS ?= 2
ARGS ?=

VENV_STAMP := $(VENV)/.installed
KENLM_STAMP := $(TOOLS)/kenlm/bin/lmplz
EFLOMAL_STAMP := $(TOOLS)/eflomal/bin/eflomal
KERNELS_STAMP := $(VENV)/.numba-kernels
SEARCH_LIB := pipeline/smt/_pbmt_search.so
DETERMINIZE_LIB := lattices/_tropical_determinize.so

.PHONY: install reproduce test docs clean-work system test-system
install: system $(VENV_STAMP) $(KENLM_STAMP) $(EFLOMAL_STAMP) $(KERNELS_STAMP) $(SEARCH_LIB) $(DETERMINIZE_LIB)

# The Debian packages that KenLM's tools and the compiled search need to build.
system:
	@scripts/install-system.sh

# What the tests need beyond that: Chromium, the headless browser of the server page's test.
test-system:
	@scripts/install-system.sh --test

$(VENV_STAMP): setup.cfg constraints.txt pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip setuptools wheel
	$(VENV)/bin/python -m pip install -q -c constraints.txt -e '.[dev]'
	@scripts/strip-pynini.sh $(VENV)/bin/python
	@touch $@

$(KENLM_STAMP): constraints.txt | system $(VENV_STAMP)
	@scripts/build-kenlm.sh $(TOOLS) $(VENV)/bin/python

$(EFLOMAL_STAMP): constraints.txt scripts/build-eflomal.sh | system $(VENV_STAMP)
	@scripts/build-eflomal.sh $(TOOLS) $(VENV)/bin/python

# The compiled phrase-based search (pipeline/smt/compiled_search.py), linked with KenLM's query code.
$(SEARCH_LIB): pipeline/smt/pbmt_search.cpp scripts/build-pbmt-search.sh constraints.txt | system $(VENV_STAMP)
	@scripts/build-pbmt-search.sh $(TOOLS) $(VENV)/bin/python

# The compiled tropical determinisation (lattices/compiled_determinize.py): OpenFst's arithmetic, so no fused
# multiply-adds and no -ffast-math.
$(DETERMINIZE_LIB): lattices/tropical_determinize.cpp | system
	@echo "building $@"
	@$(CXX) -O2 -std=c++17 -ffp-contract=off -fPIC -shared $< -o $@.tmp.$$$$ && mv $@.tmp.$$$$ $@

# numba's cache of a compiled kernel is keyed on the kernel's own file only, yet the helpers it calls from
# lattices/kernel_containers.py are compiled into it (numba issue 1833): when they change, drop every cached kernel.
$(KERNELS_STAMP): lattices/kernel_containers.py | $(VENV_STAMP)
	@find lattices -name '*.nbi' -delete -o -name '*.nbc' -delete
	@touch $@

reproduce: install
	$(VENV)/bin/reproduce-table --profile $(PROFILE) $(if $(OUT),--out $(OUT)) --workers $(WORKERS) $(ARGS)

test: install test-system
	TQDM_DISABLE=1 $(VENV)/bin/python -m pytest $(ARGS)

# The docs site (mkdocs.yml: docs/), strict: a broken link or anchor, or a page left out of the nav, fails. First
# the generated parts: the results page from results/<profile>/, and every generated region of README.md and docs/
# from the result and benchmark JSON files they name (pipeline/report/doc_regions.py).
docs: $(VENV_STAMP)
	$(VENV)/bin/python -m pipeline.report.results_page
	$(VENV)/bin/python -m pipeline.report.doc_regions
	$(VENV)/bin/mkdocs build --strict --site-dir site

# Deletes the work folders and the run outputs under results/ that git does not track (results/tiny, ...); the
# published results that git tracks stay (outside a git checkout, results/ is left as it is).
clean-work:
	rm -rf work
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git clean -fdxq -- results; \
	else echo "clean-work: not a git checkout, results/ left as it is"; fi
