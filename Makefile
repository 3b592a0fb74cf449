# gpuimg — make targets. Run `make help` for the list.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
BIN := bin/gpuimg

.PHONY: help build test lint fuzz demo demo-publish tools bench bench-validate bench-copy bench-publish bench-compression bench-startup bench-capture gpu-bins gpu-check clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/gpuimg
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/gpuimg

lint: bin/golangci-lint ## gofmt, go vet and golangci-lint (.golangci.yml)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	bin/golangci-lint run --allow-parallel-runners ./...

# golangci-lint is pinned in tools/go.mod; the first build takes a few minutes.
bin/golangci-lint: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../bin/ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

test: lint tools ## lint, unit and integration tests (real buildkitd and registry), a short fuzz run
# The race detector runs on every unit test (-short); the integration and
# end-to-end tests then run without it: it slows the layer walks of
# real CUDA libraries about 14 times (TestSBOMOfDebianCUDA: 10 s, 140 s
# under -race), and their concurrency is mostly in the daemons they drive.
	$(GO) test -race -short -count=1 -timeout 20m ./...
	$(GO) test -count=1 -timeout 45m ./...
# The shipped binary is cgo-free: load the real NVML without cgo too.
	CGO_ENABLED=0 $(GO) test -count=1 -run='^TestProbe(RealNVML|WithoutDriver)' ./validate/gpuprobe
# A run that fails is run once more: Go's fuzz coordinator can end a timed
# run with "context deadline exceeded" (a toolchain flake); a real crasher
# is saved under testdata/fuzz and fails the second run again.
	@for t in $(FUZZ_TARGETS); do $(GO) test -run='^$$' -fuzz="^$${t#*:}\$$" -fuzztime=$(FUZZ_SHORT) -fuzzminimizetime=$(FUZZ_MINIMIZE) ./$${t%:*} || \
		$(GO) test -run='^$$' -fuzz="^$${t#*:}\$$" -fuzztime=$(FUZZ_SHORT) -fuzzminimizetime=$(FUZZ_MINIMIZE) ./$${t%:*} || exit 1; done

# Fuzz targets as package:target (docs/fuzzing.md). make test runs each for
# FUZZ_SHORT, make fuzz for FUZZTIME. Minimizing each new input for the
# default minute stalls the fuzzer, so it is bounded by runs.
FUZZ_TARGETS := matrix:FuzzParseConstraint matrix:FuzzParseRequireCUDA matrix:FuzzParseFile \
	matrix/pep440:FuzzParseSpecifiers matrix/pep508:FuzzParseMarker \
	validate:FuzzScanFatbin validate:FuzzInspectLayer validate:FuzzDetectFiles validate:FuzzSecretsRedacted validate:FuzzLinkResolver \
	images:FuzzDockerArchive images:FuzzParseRef builder:FuzzLoadConfig internal/publish:FuzzParseFile
FUZZ_SHORT ?= 3s
FUZZTIME ?= 2m
FUZZ_MINIMIZE ?= 200x

fuzz: ## run every fuzz target for FUZZTIME (2m each, about 26 minutes)
	@for t in $(FUZZ_TARGETS); do echo "== $$t"; $(GO) test -run='^$$' -fuzz="^$${t#*:}\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZ_MINIMIZE) ./$${t%:*} || exit 1; done

tools: bin/buildkitd bin/golangci-lint bin/cosign bin/slsa-verifier bin/sbomread bin/local-kms ## build the pinned helpers (buildkitd, buildctl, registry, crane, golangci-lint, cosign, slsa-verifier, sbomread, local-kms) into bin/

bin/buildkitd: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../bin/ github.com/moby/buildkit/cmd/buildkitd github.com/moby/buildkit/cmd/buildctl github.com/distribution/distribution/v3/cmd/registry github.com/google/go-containerregistry/cmd/crane github.com/docker/buildx/cmd/buildx

# cosign v3 is the independent verifier of gpuimg sign's signatures
# (TestCosignInterop, docs/supply-chain.md); pinned in tools/go.mod.
bin/cosign: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../bin/ github.com/sigstore/cosign/v3/cmd/cosign

# slsa-verifier checks images promote's verification summaries
# (TestSLSAVerifierVSA); pinned in its own module, tools/slsa-verifier,
# since v2.7.1 does not build against tools/go.mod's sigstore-go.
bin/slsa-verifier: tools/slsa-verifier/go.mod tools/slsa-verifier/go.sum
	cd tools/slsa-verifier && $(GO) build -o ../../bin/ github.com/slsa-framework/slsa-verifier/v2/cli/slsa-verifier

# sbomread runs grype's and trivy's own SBOM readers on a file
# (TestScannersReadSBOM, docs/sbom.md); its own module, tools/sbomread,
# since grype and trivy bring large dependency graphs of their own.
bin/sbomread: tools/sbomread/go.mod tools/sbomread/go.sum tools/sbomread/main.go
	cd tools/sbomread && $(GO) build -o ../../bin/ .

# local-kms is an AWS KMS emulator on 127.0.0.1 for the awskms:// signing
# test (images/sign TestAWSKMS, docs/supply-chain.md); its own module,
# tools/localkms, so that tools/go.mod stays lean.
bin/local-kms: tools/localkms/go.mod tools/localkms/go.sum
	cd tools/localkms && $(GO) build -o ../../bin/local-kms github.com/nsmithuk/local-kms

demo: ## end to end on local daemons: build CUDA 12.2 + PyTorch 2.3, push, check with skopeo (root)
	@echo "==> make demo: about 10 minutes the first time on a fresh machine (compiling gpuimg, buildkitd and the registry; debootstrap), about 30 s after that"
	@echo "==> compiling gpuimg into $(BIN) (first time: a minute or two)"
	@$(MAKE) --no-print-directory build
	./$(BIN) matrix resolve --cuda 12.2 --torch 2.3
	@echo "==> compiling examples/demo (first time: a minute or two)"
	$(GO) run ./examples/demo -gpuimg $(BIN)

demo-publish: ## gpuimg publish end to end on local daemons: 3 variants on 2 buildkitds, run twice (the second skips all), report path (root)
	@echo "==> make demo-publish: about 10 minutes the first time on a fresh machine (the setup of make demo), about a minute after that"
	@$(MAKE) --no-print-directory build
	@echo "==> compiling examples/demo-publish (first time: a minute or two)"
	$(GO) run ./examples/demo-publish -gpuimg $(BIN)

bench: build tools ## build-speed benchmark against a plain Dockerfile: cold, no-op and one-package rebuilds; SIZE=0.1|1|3 scales the wheels to GB (root)
	$(GO) run ./bench/build -gpuimg $(BIN) $(if $(SIZE),-size $(SIZE))

bench-validate: build tools ## gpuimg validate vs skopeo copy, and validate vs sbom (validate + SBOM) sbom --attach --key (+ signing) and validate --attach --key --sbom (report + SBOM + signing), on a multi-GB image of CUDA libraries (root)
	$(GO) run ./bench/validate -gpuimg $(BIN)

bench-capture: build tools ## gpuimg capture and diff of the Debian fixture root with a venv of 300 distributions, then capture → build → diff of the hand-built environment on the test buildkitd and registry (root)
	$(GO) run ./bench/capture -gpuimg $(BIN)

bench-copy: build tools ## gpuimg images copy vs crane copy and skopeo copy of a 1 GB image (root)
	$(GO) run ./bench/copy -gpuimg $(BIN)

bench-publish: build tools ## gpuimg publish of a 4-variant matrix vs gpuimg build one by one; an unchanged nightly of 8 variants (root)
	$(GO) run ./bench/publish -gpuimg $(BIN)

bench-compression: ## layer compressions on real CUDA libraries: size, build-time and pull-time cost of gzip and zstd levels (root)
	$(GO) run ./bench/compression

bench-startup: tools bin/containerd ## time to ready on containerd 2 through a modelled 100 Mbit/s and 1 Gbit/s link: naive vs gpuimg, zstd, eStargz (root)
	$(GO) run ./bench/startup

# containerd, its runc shim, ctr and stargzd (tools/stargzd over stargz-snapshotter) are pinned in tools/go.mod.
bin/containerd: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../bin/ github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr && $(GO) build -o ../bin/stargzd ./stargzd

gpu-bins: ## stripped gpuimg and validate.test in bin/gpu/ (under 64 MiB together: what the GPU machine is sent)
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o bin/gpu/gpuimg ./cmd/gpuimg
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/validate.test ./validate

gpu-check: gpu-bins ## on a GPU machine: probe, --bench, probe.py's GPU tests, fat-binary cross-check into OUT (default /tmp/gpuimg-gpu)
	bench/gpu/run.sh $(or $(OUT),/tmp/gpuimg-gpu)

clean: ## remove build outputs
	rm -rf bin
