# The README's two commands: `make demo` and `make test`. Both create .venv first.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test test-fast lint bench clean

install:
	@scripts/bootstrap.sh

demo: install
	$(BIN)/verbatim demo

# The whole suite. Fault drills run in parallel workers (-n 2): each starts its own servers.
test: install
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=15

test-fast: install
	$(BIN)/python -m pytest tests/unit

lint: install
	$(BIN)/ruff check src workers tests bench
	$(BIN)/mypy

bench: install
	$(BIN)/python bench/asr.py

clean:
	rm -rf $(VENV) .verbatim
