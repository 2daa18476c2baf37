# Better Compute control plane. `make help` lists the targets.
# Everything here runs on a fresh machine with Go and the PostgreSQL 15
# binaries: tools come in as Go tool dependencies, PostgreSQL is started by
# the project itself when DATABASE_URL is unset.

GO      ?= go
BIN     := bin/compute
ARGS    ?=
PKGS    := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/compute
	$(GO) build -o $(BIN) ./cmd/compute

.PHONY: run
run: build ## start `compute serve` on :8080 (private PostgreSQL when DATABASE_URL is unset); ARGS=--demo seeds a demo fleet
	exec ./$(BIN) serve $(ARGS)

.PHONY: generate
generate: ## regenerate internal/db from sql/ with sqlc
	$(GO) tool sqlc generate

.PHONY: vet
vet: ## go vet
	$(GO) vet $(PKGS)

.PHONY: lint
lint: ## fail on unformatted Go files and on now() and friends in SQL and Go strings (use compute_now())
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.compute/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) run ./internal/tools/checksqlnow .

.PHONY: sqlc-diff
sqlc-diff: ## fail when generated code does not match sql/
	$(GO) tool sqlc diff

.PHONY: test
test: vet lint sqlc-diff ## everything CI runs: vet, lint, sqlc diff, go test -race on one private PostgreSQL
	$(GO) run ./internal/tools/withpg -- $(GO) test -race -count=1 -timeout 12m $(PKGS)

.PHONY: test-ui
test-ui: ## browser tests of the console in a real Chromium (COMPUTE_UI_SCREENSHOTS=1 also rewrites docs/console/*.png)
	$(GO) run ./internal/tools/withpg -- env COMPUTE_UI_TEST=1 $(GO) test -count=1 -timeout 10m -run Browser ./console/

.PHONY: bench
bench: ## run cmd/compute-bench: pgbench-relative benchmarks on a private durable PostgreSQL (ARGS=--quick: CI size, ~80 s); figures in docs/benchmarks.md
	$(GO) run ./cmd/compute-bench $(ARGS)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 10s) each on a private PostgreSQL
	$(GO) run ./internal/tools/withpg -- scripts/fuzz-short.sh

.PHONY: chaos
chaos: ## the full fault-injection run (100 SIGKILLs, 30 s outages; ~9 min); make test runs the CI size
	COMPUTE_CHAOS=full $(GO) test -count=1 -v -timeout 25m ./chaos/

.PHONY: clean
clean: ## remove build output and the private PostgreSQL data
	rm -rf bin .compute
