# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint install clean

# Python caches compiled modules (and pytest its rewritten tests) in __pycache__/ (git-ignored): a shell that sets
# PYTHONDONTWRITEBYTECODE would make every test process and every `python -m auditor` it starts compile the package
# and the test modules again (collection 10 s instead of 5, per worker).
unexport PYTHONDONTWRITEBYTECODE

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The numba kernels compile here, two processes at once (~13 s), instead of one after another in the first audit
# (and in each test worker): `auditor precompile`.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,dask]'
	$(BIN)/auditor precompile
	touch $(STAMP)

install: $(STAMP)

# The demo signs its report with a throw-away identity made on first use (examples/bookstore/keys, not committed).
# With AUDITOR_TSA_URL (and AUDITOR_TSA_ROOTS, the TSA's root certificates) set it signs with trusted time (B-LTA).
# Its opinion is negative on purpose (an undeclared main parameter): --fail-on never keeps `make demo` green.
DEMO_KEYS := examples/bookstore/keys
export AUDITOR_KEY_PASS ?= bookstore-demo-only

demo: $(STAMP)
	@test -f $(DEMO_KEYS)/signer.p12 || $(BIN)/auditor keygen --out $(DEMO_KEYS) \
		--name "Bookstore demo signer (not for real audits)" --organisation "Example Books GmbH" > /dev/null
	@run=$$($(BIN)/auditor report examples/bookstore/audit.yaml --out reports --fail-on never) || exit $$?; \
	 tsa=""; for root in $$(echo "$${AUDITOR_TSA_ROOTS:-}" | tr ':' ' '); do tsa="$$tsa --trust $$root"; done; \
	 $(BIN)/auditor verify "$$(dirname "$$run")" --trust $(DEMO_KEYS)/signer-cert.pem $$tsa \
		--pubkey $(DEMO_KEYS)/bundle-ed25519.pub.pem && echo "report: $$run"

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check .

# The suite without the tests marked slow (whole audits, trusted time, fuzzing): under 2 minutes on 2 cores.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder -m "not slow"

clean:
	rm -rf $(VENV) reports .pytest_cache .mypy_cache
