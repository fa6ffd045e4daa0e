# batch-apiserver: every target a developer or CI needs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BIN_DIR    ?= _output/bin
BINARY     := $(BIN_DIR)/batch-apiserver
GO         ?= go
GOFLAGS    ?=
# Packages of the unit tier: everything but the integration and e2e tiers.
UNIT_PKGS   = $(shell $(GO) list ./... | grep -v -e /test/integration -e /test/e2e)

.PHONY: all build run test test-unit test-integration test-e2e e2e-bins bench lint update verify clean

all: build

build: ## Build the server binary into _output/bin.
	$(GO) build -o $(BINARY) ./cmd/batch-apiserver

run: build ## Run standalone on the embedded default (data in ./data, HTTPS on 127.0.0.1:8443).
	$(BINARY) --data-dir data

test: build verify test-unit test-integration test-e2e ## Every tier CI runs, after checking generated code is current.

test-unit:
	$(GO) test -count=1 $(UNIT_PKGS)

test-integration:
	$(GO) test -count=1 -timeout 20m ./test/integration/...

e2e-bins: ## Build kube-apiserver, kube-controller-manager and kubectl v1.37.2 (cached).
	bash hack/build-e2e-bins.sh

test-e2e: build e2e-bins ## kube-apiserver + kube-controller-manager + kubectl v1.37.2 with batch-apiserver aggregated, and standalone.
	BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO) test -count=1 -v -timeout 20m ./test/e2e/...

bench: ## Benchmarks (validation; server load generator when present).
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

lint: ## go vet and gofmt (generated code excluded from gofmt checks).
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v -e '^pkg/generated/' -e 'zz_generated')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

update: ## Regenerate code, gofmt, tidy.
	bash hack/update-codegen.sh
	gofmt -w $$(git ls-files '*.go' | grep -v -e '^pkg/generated/' -e 'zz_generated')
	$(GO) mod tidy

verify: ## Fail when generated code, formatting or go.mod are stale.
	bash hack/verify-codegen.sh

clean:
	rm -rf _output/bin/batch-apiserver
