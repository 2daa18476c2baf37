# Better Compute control plane. `make help` lists the targets.
# Everything here runs on a fresh machine with Go and the PostgreSQL 15
# binaries: tools come in as Go tool dependencies, PostgreSQL is started by
# the project itself when DATABASE_URL is unset.

GO      ?= go
BIN     := bin/compute
ARGS    ?=
PKGS    := ./...
# Release builds (`make dist`, `make docker`): the version and commit linked
# into the variables main.version and main.commit of cmd/compute.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DIST    ?= dist
ARCHES  ?= amd64 arm64
IMAGE   ?= compute

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/compute, stamped with the version and commit of the checkout
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/compute

.PHONY: run
run: build ## start `compute serve` on :8080 (private PostgreSQL when DATABASE_URL is unset); ARGS=--demo seeds a demo fleet
	exec ./$(BIN) serve $(ARGS)

.PHONY: generate
generate: ## regenerate internal/db from sql/ with sqlc
	$(GO) tool sqlc generate

.PHONY: client
client: ## regenerate the Go client (client/openapi.gen.go) from docs/openapi.yaml with oapi-codegen
	$(GO) tool oapi-codegen -config client/oapi-codegen.yaml -o client/openapi.gen.go docs/openapi.yaml

.PHONY: deps-patches
deps-patches: ## list required modules whose newest patch (same major.minor) is newer than go.mod's; asks the module proxy
	GO="$(GO)" $(GO) run ./devtools/depspatches

.PHONY: vet
vet: ## go vet
	$(GO) vet $(PKGS)

.PHONY: lint
lint: ## fail on unformatted Go files and on now() and friends in SQL and Go strings (use compute_now())
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.compute/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) run ./devtools/checksqlnow .

.PHONY: sqlc-diff
sqlc-diff: ## fail when generated code does not match sql/
	$(GO) tool sqlc diff

.PHONY: test
# The timeout is per package: the chaos package's fault tests take about 5
# minutes alone and more beside the others on a slow 2-core machine; 20m
# keeps a slow CI machine from failing it for time alone.
test: vet lint sqlc-diff ## what CI runs first: vet, lint (gofmt, now()), sqlc diff, go test -race on one private PostgreSQL
	$(GO) run ./devtools/withpg -- $(GO) test -race -count=1 -timeout 20m $(PKGS)

.PHONY: test-pgbouncer
test-pgbouncer: ## the command, torture, projection, query, HTTP and webhook suites again, through PgBouncer (CI runs it after make test)
	$(GO) run ./devtools/withpg -- env COMPUTE_PGBOUNCER_SUITES=1 $(GO) test -count=1 -timeout 20m -run '^TestSuitesThroughPgBouncer$$' -v ./chaos/

.PHONY: test-ui
test-ui: ## browser tests of the console in a real Chromium (COMPUTE_UI_SCREENSHOTS=1 also rewrites docs/console/*.png)
	$(GO) run ./devtools/withpg -- env COMPUTE_UI_TEST=1 $(GO) test -count=1 -timeout 10m -run Browser ./console/

.PHONY: bench
bench: ## run cmd/compute-bench: pgbench-relative benchmarks on a private durable PostgreSQL (ARGS=--quick: CI size, ~80 s); figures in docs/benchmarks.md
	$(GO) run ./cmd/compute-bench $(ARGS)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 10s) each on a private PostgreSQL
	$(GO) run ./devtools/withpg -- scripts/fuzz-short.sh

.PHONY: chaos
chaos: ## the full fault-injection run (100 SIGKILLs, 30 s outages; ~9 min); make test runs the CI size
	COMPUTE_CHAOS=full $(GO) test -count=1 -v -timeout 25m ./chaos/

.PHONY: dist
dist: ## release archives dist/compute_<version>_linux_{amd64,arm64}.tar.gz + SHA256SUMS (VERSION=, ARCHES= override)
	GO="$(GO)" VERSION="$(VERSION)" COMMIT="$(COMMIT)" DIST="$(DIST)" ARCHES="$(ARCHES)" sh packaging/dist.sh

.PHONY: docker
docker: ## docker build the serve image compute:<version> (only prints the command without docker)
	@set -- env DOCKER_BUILDKIT=1 docker build --build-arg VERSION="$(VERSION)" --build-arg COMMIT="$(COMMIT)" -t "$(IMAGE):$(VERSION)" .; \
	  echo "$$*"; \
	  if command -v docker >/dev/null 2>&1; then exec "$$@"; else echo "docker is not installed here: run the command above where it is"; fi

.PHONY: clean
# A private cluster the postgres user could not have in .compute (a checkout
# under /root) lives under the temp dir, named after a hash of its path
# (internal/pg/cluster's fallbackDir): those of `make run` and `make test`
# go too.
clean: ## remove build output, release archives and the private PostgreSQL data
	rm -rf bin .compute $(DIST)
	@for d in pg testpg; do \
	  h=$$(printf '%s' "$$(pwd)/.compute/$$d" | sha256sum | cut -c1-12); \
	  rm -rf "$${TMPDIR:-/tmp}/pgcluster-$$h"; \
	done
