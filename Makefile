# fleetgate build and test targets.
GO        ?= go
BIN       := bin
PROTOC    ?= protoc
BENCHTIME ?= 1x

.PHONY: all build test test-short fuzz run bench lint proto clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## test: the whole suite with the race detector.
test:
	$(GO) test -race -count=1 -timeout 12m ./...

test-short:
	$(GO) test -short -count=1 ./...

## fuzz: every fuzz target of every package (a parser of outside bytes
## each), FUZZTIME apiece; a failure stops at once, its input saved under
## the package's testdata/fuzz/.
FUZZTIME ?= 10s
fuzz:
	@set -e; for file in $$(grep -rlE --include='*_test.go' '^func Fuzz' cmd pkg test | sort); do \
	  for f in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' $$file | cut -d' ' -f2); do \
	    echo "fuzz ./$$(dirname $$file) $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./$$(dirname $$file); \
	  done; \
	done

## run: a working fleet on this machine (controller with embedded NATS, an edge, demo backends).
run: build
	$(GO) build -o $(BIN)/demo ./test/demo
	$(BIN)/demo

## bench: the benchmarks whose figures the issues report (the edge's
## fan-out and session memory with BENCH_SESSIONS idle sessions).
BENCH_SESSIONS ?= 5000
bench:
	FLEETGATE_BENCH_SESSIONS=$(BENCH_SESSIONS) $(GO) test -run '^$$' -bench . -benchmem ./pkg/... ./test/...

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...

## proto: regenerate the committed protobuf code (needs protoc: apt-get install protobuf-compiler).
proto:
	$(GO) build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	$(PROTOC) --plugin=protoc-gen-go=$(BIN)/protoc-gen-go --go_out=. \
		--go_opt=module=github.com/fleetgate/fleetgate -I proto proto/events.proto

clean:
	rm -rf $(BIN)
