# ticketd — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO        ?= go
BIN       ?= bin/ticketd
PKGS      ?= ./...
BENCHTIME ?= 2s
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The version `ticketd version` reports: the commit, -dirty with local edits.
# Outside a git checkout it stays empty and the binary falls back to the
# module and VCS information Go stamps into it.
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null)
# The tag `make image` gives the image it builds, and the repository a
# release is pushed to (server.json names IMAGE_REPO:<version>): a release is
# `make image VERSION=0.4.0 IMAGE=$(IMAGE_REPO):0.4.0`, then podman push.
IMAGE      ?= localhost/ticketd:dev
IMAGE_REPO ?= ghcr.io/ticketd/ticketd

.PHONY: help run test test-short build image lint bench bench-e2e bench-peer load cover fuzz screenshots

help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## Run the server with embedded SQLite and dev auth (prints a token).
	$(GO) run ./cmd/ticketd serve --dev

# The prerequisites are checked first, in seconds, each failing with one line
# saying what to do: PostgreSQL answers (never installed here), Chromium is
# found (Debian's chromium installed when missing, saying so). The failover
# tests need pg_auto_failover; ensure-pg-auto-failover.sh installs it with
# apt-get where it can, and where it cannot they are skipped with the
# script's reason printed above. Their figures are printed after the run
# (TICKETD_HA_REPORT), as go test shows a passing test's log only with -v.
# The image test (deploy/image) builds `make image` and runs `ticketd
# version` from it; ensure-podman.sh installs Debian's podman when missing,
# and where it cannot the test is skipped with the script's reason.
test: ## Run every test with -race against real PostgreSQL (an existing server; see docs/testing.md), SQLite, Chromium, podman and pg_auto_failover.
	@status=1; report=$$(mktemp); \
	  url=$$(./scripts/ensure-postgres.sh) && \
	  chromium=$$(./scripts/ensure-chromium.sh) && \
	  echo "make test: PostgreSQL answers at $${url%%\?*}; Chromium is $$chromium" | sed -E 's#//[^@]*@#//…@#' && \
	  ./scripts/ensure-postgres_test.sh "$$url" && \
	  if pgaf=$$(./scripts/ensure-pg-auto-failover.sh); then export TICKETD_PG_AUTOCTL="$$pgaf"; \
	  else export TICKETD_PG_AUTO_FAILOVER_UNAVAILABLE="scripts/ensure-pg-auto-failover.sh failed (its reason is printed before the test output)"; fi && \
	  if podman=$$(./scripts/ensure-podman.sh); then export TICKETD_PODMAN="$$podman"; \
	  else export TICKETD_PODMAN_UNAVAILABLE="scripts/ensure-podman.sh failed (its reason is printed before the test output)"; fi && \
	  { TICKETD_TEST_DATABASE_URL="$$url" TICKETD_REQUIRE_POSTGRES=1 TICKETD_REQUIRE_BROWSER=1 TICKETD_CHROMIUM="$$chromium" TICKETD_HA_REPORT="$$report" \
	  $(GO) test -race -count=1 -timeout 10m $(PKGS); status=$$?; } ; \
	  if [ -s "$$report" ]; then echo "high availability:"; cat "$$report"; fi; rm -f "$$report"; exit $$status

test-short: ## Run the tests without PostgreSQL (its tests skip).
	$(GO) test -count=1 $(PKGS)

# No -trimpath here: it would change every package's cache key and compile
# the whole tree (pure-Go SQLite included) again after `go run`/`go test`.
# The Dockerfile's release build uses it.
build: ## Build the binary into bin/, its version from git describe.
	$(GO) build -ldflags "-X github.com/ticketd/ticketd/internal/buildinfo.version=$(VERSION)" -o $(BIN) ./cmd/ticketd

# FROM scratch with podman (installed with apt-get when missing): nothing is
# pulled. The binary is static and -trimpath, so its first build compiles the
# tree once more (a couple of minutes on two cores), then it is cached.
image: ## Build the OCI image IMAGE (default localhost/ticketd:dev) from a static binary built here, FROM scratch.
	GO=$(GO) ./scripts/image.sh $(IMAGE) $(VERSION)

lint: ## gofmt, go vet and staticcheck (fetched once through the module proxy).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

bench: ## Benchmarks on PostgreSQL and SQLite (create, update, comment and their replays, -cpu 1,2).
	@url=$$(./scripts/ensure-postgres.sh) && \
	  TICKETD_TEST_DATABASE_URL="$$url" $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -cpu 1,2 ./internal/tickets/

bench-e2e: ## ticketd vs the go-sdk (and, with Node, TypeScript SDK) no-op floors, interleaved (ROUNDS=3 WARMUP=2s DURATION=8s WORKERS=16 SEEDS=).
	./scripts/bench-e2e.sh $(ARGS)

bench-peer: ## DESIGN §24: ticketd vs the go-sdk no-op floor and the naive peer from ../shared/bench (SHARED=), analysed and never analysed; prints the goals.
	./scripts/bench-peer.sh

load: ## Load-test MCP writes end to end (ARGS="-duration 10s -workers 8 -update-ratio 0.3 -comment-ratio 0.3"; PG=1 for PostgreSQL, needs psql).
	./scripts/load.sh $(ARGS)

cover: ## Test with coverage; writes coverage.out and prints the total.
	@url=$$(./scripts/ensure-postgres.sh) && \
	  TICKETD_TEST_DATABASE_URL="$$url" $(GO) test -count=1 -coverpkg=./... -coverprofile=coverage.out $(PKGS) >/dev/null && \
	  $(GO) tool cover -func=coverage.out | tail -n 1

screenshots: ## Refresh docs/console/*.png from the console's browser test (needs Chromium).
	TICKETD_REQUIRE_BROWSER=1 $(GO) test -count=1 -run '^TestBrowser(Views|Approval|SubTasks)?$$' ./internal/console/ -update-screenshots

fuzz: ## Fuzz the parsers of untrusted input, the JWT verifier and the fast argument check against jsonschema-go (FUZZTIME each, default 30s).
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $${FUZZTIME:-30s} ./internal/tickets/
	$(GO) test -run '^$$' -fuzz '^FuzzParseID$$' -fuzztime $${FUZZTIME:-30s} ./internal/operations/
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $${FUZZTIME:-30s} ./internal/authn/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckMessage$$' -fuzztime $${FUZZTIME:-30s} ./internal/mcpedge/
	$(GO) test -run '^$$' -fuzz '^FuzzFastValidatorAgreesWithJSONSchema$$' -fuzztime $${FUZZTIME:-30s} ./internal/mcptools/
