# gpuimg — make targets. Run `make help` for the list.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
BIN := bin/gpuimg

.PHONY: help build test lint fuzz demo tools clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/gpuimg
	$(GO) build -trimpath -o $(BIN) ./cmd/gpuimg

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: lint ## lint, unit and integration tests, a short fuzz run
	$(GO) test -race -count=1 ./...
	$(GO) test -run='^$$' -fuzz=FuzzParseConstraint -fuzztime=10s ./matrix

fuzz: ## fuzz the version and constraint parser for 2 minutes
	$(GO) test -run='^$$' -fuzz=FuzzParseConstraint -fuzztime=2m ./matrix

tools: ## build the pinned helper daemons (buildkitd, buildctl, registry) into bin/
	cd tools && $(GO) build -o ../bin/ github.com/moby/buildkit/cmd/buildkitd github.com/moby/buildkit/cmd/buildctl github.com/distribution/distribution/v3/cmd/registry

demo: build ## resolve and check the README's example stack
	./$(BIN) matrix resolve --cuda 12.2 --torch 2.3
	@echo
	./$(BIN) matrix resolve --cuda 12.2 --torch 2.3 -o json
	@echo
	./$(BIN) matrix check --cuda 12.2 --torch 2.3 --driver 535.104.05 --gpu h100
	@echo
	@echo '# a host that is too old: exit 1 and the reason'
	-./$(BIN) matrix check --cuda 12.2 --torch 2.3 --driver 470.57.02 --gpu v100

clean: ## remove build outputs
	rm -rf bin
