# Copyright The batch-apiserver Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# batch-apiserver: every target a developer or CI needs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BIN_DIR    ?= _output/bin
BINARY     := $(BIN_DIR)/batch-apiserver
GO         ?= go
# The Go toolchain is the one go.mod's toolchain line names (a Go patch
# release with the standard library's security fixes, fetched once through
# the module proxy), even where the machine's go.env says GOTOOLCHAIN=local.
export GOTOOLCHAIN ?= auto
GOFLAGS    ?=
# -X flags stamping k8s.io/component-base/version (git version, commit, tree
# state, commit date), as Kubernetes stamps its components.
# Evaluated once per make run (:=), so that the binary and the image's labels
# name the same commit even when the tree changes in between.
VERSION_LDFLAGS := $(shell bash hack/version.sh --ldflags)
GIT_VERSION     := $(shell bash hack/version.sh --version)
GIT_COMMIT      := $(shell bash hack/version.sh --commit)
SOURCE_EPOCH    := $(shell bash hack/version.sh --epoch)
# A static (no libc), path-independent, stamped binary: the same commit
# builds the same bytes, and it runs in an image with nothing else in it.
GO_BUILD_STATIC = CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "-s -w $(VERSION_LDFLAGS)"
# The image: `make image` writes $(IMAGE_TAR), loadable with docker/podman load.
IMAGE_NAME ?= batch-apiserver
# The tag docker load gives it: the git version (IMAGE_TAG=v0.1.0 names a
# development build as artifacts/deploy/deployment.yaml does, e.g. for kind).
IMAGE_TAG  ?= $(subst +,_,$(GIT_VERSION))
IMAGE_DIR   = _output/images
IMAGE_TAR   = $(IMAGE_DIR)/batch-apiserver.tar
# The go test of make test's tiers compiles as `make build` does (no cgo,
# -trimpath): the dependencies compiled for the binaries are the ones the
# tests link, not a second copy of the whole tree built with cgo.
GO_TEST     = CGO_ENABLED=0 $(GO) test -trimpath
# Packages of the unit tier: everything but the integration, e2e and scale tiers.
UNIT_PKGS   = $(shell $(GO) list ./... | grep -v -e /test/integration -e /test/e2e -e /test/scale -e /test/upgrade)

.PHONY: all build image run demo upgrade-bins-background promtool test-monitoring test test-image test-unit test-integration test-flakes test-e2e test-upgrade upgrade-bins test-kueue-unit kueue-bins kueue-image test-faults e2e-bins bench bench-controller fuzz lint vulncheck update verify clean scale-bins test-scale bench-scale compat-bins test-compat

all: build

build: ## Build the server binary, the managedby-conformance kit and the kubectl-bjob plugin (static, stamped with hack/version.sh) into _output/bin.
	$(GO_BUILD_STATIC) -o $(BINARY) ./cmd/batch-apiserver
	$(GO_BUILD_STATIC) -o $(BIN_DIR)/managedby-conformance ./cmd/managedby-conformance
	$(GO_BUILD_STATIC) -o $(BIN_DIR)/kubectl-bjob ./cmd/kubectl-bjob

image: build ## OCI image tarball of the binary (no daemon, no base image): _output/images/batch-apiserver.tar.
	@mkdir -p $(IMAGE_DIR)
	cd hack/image && GOWORK=off $(GO) run . \
		--binary $(abspath $(BINARY)) --output $(abspath $(IMAGE_TAR)) \
		--tag $(IMAGE_NAME):$(IMAGE_TAG) \
		--version $(GIT_VERSION) --revision $(GIT_COMMIT) \
		--created $(SOURCE_EPOCH) --os linux --arch $$($(GO) env GOARCH)

# The Kueue integration's image: make kueue-image writes
# _output/images/batch-kueue.tar (artifacts/kueue/deployment.yaml).
KUEUE_IMAGE_TAR = $(IMAGE_DIR)/batch-kueue.tar

kueue-bins: ## Build batch-kueue (the Kueue integration, cmd/batch-kueue, a module of its own) and Kueue v0.17.0's manager (for the e2e tier) into _output/bin.
	bash hack/build-kueue-bins.sh

kueue-image: kueue-bins ## OCI image tarball of batch-kueue: _output/images/batch-kueue.tar.
	@mkdir -p $(IMAGE_DIR)
	cd hack/image && GOWORK=off $(GO) run . \
		--binary $(abspath $(BIN_DIR)/batch-kueue) --output $(abspath $(KUEUE_IMAGE_TAR)) \
		--tag batch-kueue:$(IMAGE_TAG) \
		--version $(GIT_VERSION) --revision $(GIT_COMMIT) \
		--created $(SOURCE_EPOCH) --os linux --arch $$($(GO) env GOARCH)

# A release of this commit (docs/releasing.md): refuses a version that is
# not vX.Y.Z[-pre], a dirty tree, a tag of that name on another commit and
# a version CHANGELOG.md has no section for.
.PHONY: release
release: ## make release VERSION=vX.Y.Z: _output/release/VERSION with both images tagged VERSION, the manifests rendered with those tags, the kubectl-bjob archive, RELEASE_NOTES.md and SHA256SUMS (hack/release.sh).
	bash hack/release.sh "$(VERSION)"

demo: build scale-bins ## A throwaway cluster (kube-apiserver, kube-scheduler, KWOK nodes) with batch-apiserver aggregated and its controller on: the examples run to Complete, then it waits for Ctrl-C and removes everything.
	bash hack/demo.sh

run: build ## Run standalone on the embedded default (data in ./data, HTTPS on 127.0.0.1:8443).
	$(BINARY) --data-dir data

# In the order that gets a cold clone to its first failure soonest: the
# image comes before the unit tier (test/image opens it); the unit and
# integration tiers need nothing but the main module, so they run before
# the other modules (Kueue, promtool) and the host binaries the e2e and
# scale tiers run (e2e-bins, scale-bins, kueue-bins) are compiled.
test: build verify lint image test-image test-unit test-integration test-kueue-unit vulncheck test-monitoring upgrade-bins-background test-e2e test-upgrade test-scale ## Every tier CI runs, after checking generated code is current.

# The e2e tier waits on servers more than it computes, and leaves about a
# core idle: make test starts the previous version's build (test-upgrade's,
# minutes when cold) right before it, in the background at the lowest
# priority. test-upgrade's own build waits for it (hack/build-upgrade-from.sh
# takes a lock) and rebuilds, showing the error, if it failed.
upgrade-bins-background:
	@mkdir -p _output/upgrade
	@echo "bash hack/build-upgrade-from.sh in the background (nice 19), log in _output/upgrade/background.log"
	@nice -n 19 bash hack/build-upgrade-from.sh >_output/upgrade/background.log 2>&1 &

test-image: ## Tests of the image builder (its own module).
	cd hack/image && GOWORK=off $(GO_TEST) -count=1 ./...

test-kueue-unit: ## Unit tests of the Kueue integration (its own module).
	cd cmd/batch-kueue && GOWORK=off $(GO_TEST) -count=1 ./...

test-unit:
	$(GO_TEST) -count=1 $(UNIT_PKGS)

test-integration:
	$(GO_TEST) -count=1 -timeout 20m ./test/integration/...

promtool: ## promtool into _output/bin (cached): from Debian's prometheus package where apt is, else built from hack/tools/promtool (PROMTOOL_FROM=debian|source).
	bash hack/build-promtool.sh

# promtool reads plain rule files: the PrometheusRule's spec, de-indented,
# next to a copy of the rules' unit tests.
MONITORING_OUT = _output/monitoring

test-monitoring: promtool ## promtool check rules and promtool test rules of artifacts/monitoring/prometheusrule.yaml.
	@mkdir -p $(MONITORING_OUT)
	awk 'f { sub(/^  /, ""); print } /^spec:$$/ { f = 1 }' artifacts/monitoring/prometheusrule.yaml > $(MONITORING_OUT)/rules.yaml
	cp artifacts/monitoring/rules_test.yaml $(MONITORING_OUT)/rules_test.yaml
	$(BIN_DIR)/promtool check rules $(MONITORING_OUT)/rules.yaml
	cd $(MONITORING_OUT) && $(abspath $(BIN_DIR))/promtool test rules rules_test.yaml

# Not part of make test: it runs every test of the unit tier FLAKES_COUNT
# times (default 20) and of the integration tier FLAKES_INTEGRATION_COUNT
# times (default 3) under -race with every core busy, and takes long.
# FLAKES_PKGS narrows it, e.g. FLAKES_PKGS=./pkg/controller/... FLAKES_COUNT=3.
FLAKES_PKGS  ?=
FLAKES_COUNT ?= 20
FLAKES_INTEGRATION_COUNT ?= 3
test-flakes: ## The unit tier with -race -count=FLAKES_COUNT (20), the integration tier with -count=FLAKES_INTEGRATION_COUNT (3), while busy loops keep every core busy (hack/test-flakes.sh); finds tests that depend on timing.
	GO=$(GO) FLAKES_COUNT=$(FLAKES_COUNT) FLAKES_INTEGRATION_COUNT=$(FLAKES_INTEGRATION_COUNT) bash hack/test-flakes.sh $(FLAKES_PKGS)

e2e-bins: ## Build kube-apiserver, kube-controller-manager and kubectl v1.37.2 (cached).
	bash hack/build-e2e-bins.sh

# test/e2e runs on one shared host cluster; test/e2e/kueue starts two of its
# own (Kueue, KWOK, kube-scheduler): -p 1 runs the packages one after the
# other, not both at once on a small machine.
test-e2e: build e2e-bins scale-bins kueue-bins ## kube-apiserver + kube-controller-manager + kubectl v1.37.2 with batch-apiserver aggregated, and standalone; Kueue and MultiKueue over two clusters (test/e2e/kueue).
	BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO_TEST) -p 1 -count=1 -v -timeout 30m ./test/e2e/...

# The previous version is the commit hack/upgrade-from pins, built from
# this repository's own history (git archive, no checkout) with the same Go
# caches; the binary is kept in _output/upgrade/<version>-<commit>/.
upgrade-bins: ## Build the previous version's batch-apiserver (hack/upgrade-from) from the local git history (cached).
	bash hack/build-upgrade-from.sh >/dev/null

test-upgrade: build e2e-bins upgrade-bins ## The previous version and this one on the same data, both ways: a standalone data directory, and two aggregated replicas on a three-member etcd rolled one at a time under write load with Jobs in flight.
	UPGRADE_FROM_BIN=$$(bash hack/build-upgrade-from.sh 2>/dev/null | tail -n1) \
		BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO_TEST) -count=1 -v -timeout 20m ./test/upgrade/

scale-bins: e2e-bins ## Build kwok v0.8.0 (hack/tools/kwok, cached) beside kube-scheduler and the other host binaries.
	bash hack/build-scale-bins.sh

test-scale: build scale-bins ## Correctness on simulated nodes: a small batch mix and Jobs with failures under kube-controller-manager's job controller and ours (kube-scheduler + kwok).
	BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO_TEST) -count=1 -v -timeout 15m -run '^TestScaleSmall$$' ./test/scale/

# The fault tests run bounded in make test (test-integration, test-e2e);
# this runs the crash and HA tests at full size: 16 writers, 10 s of load, three
# trials of the crash tests, standalone and aggregated.
test-faults: build e2e-bins ## Fault tests at full size: kill -9 under load (standalone, aggregated), HA (3 etcd members, 2 replicas), etcd outage, conflicts, watch resume, too-large objects.
	E2E_FAULTS_FULL=1 BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO) test -count=1 -v -timeout 30m -run '^(TestCrash.*|TestHA)$$' ./test/e2e/
	$(GO) test -count=1 -v -timeout 20m -run '^(TestConflictsMixedVersions|TestWatchResumesAcrossRestart|TestWatchAfterCompactionIsGone|TestWatchBookmarks|TestEtcdOutage|TestTooLarge.*)$$' ./test/integration/

bench-controller: build e2e-bins ## 500 one-Pod Jobs under kube-controller-manager's job controller and ours: wall time and CPU seconds (E2E_BENCH_JOBS=N for another count).
	E2E_BENCH=1 BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO) test -count=1 -v -timeout 40m -run '^TestControllerBenchmark$$' ./test/e2e/

# BENCH_SCALE scales the side-by-side benchmark's counts (1: 3000
# operations per phase, 10 000 Jobs stored).
BENCH_SCALE ?= 1

bench: build e2e-bins ## Side by side under the same load: kube-apiserver 1.37.2 (protobuf, JSON), batch-apiserver aggregated and standalone, raw etcd; prints one table of figures and ratios and writes them to _output/bench/results.json; then the Go benchmarks of ./pkg/...
	BENCH=1 BENCH_SCALE=$(BENCH_SCALE) BENCH_OUT=$(abspath _output/bench/results.json) \
		BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO) test -count=1 -v -timeout 40m -run '^TestSideBySide$$' ./test/bench/
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

bench-scale: build scale-bins ## The scale benchmark on simulated nodes: batch mix (each side's default client rate, then both 100/200), one large Indexed Job, Jobs with failures, finished Jobs stored; kube-controller-manager vs ours on kube-scheduler + kwok; prints a table, writes _output/bench-scale/results.json and its plots, _output/bench-scale/plots/*.svg (hack/benchplot). BENCH_SCALE=F scales every count (1: 5 000 Pods in the mix, 20 000 completions, 2 000 Jobs with failures, 150 000 stored, 1 000 nodes). BENCH_SCALE_PHASES runs a comma-separated subset of mix_defaults,mix_equal_qps,large_job,failures,stored and BENCH_SCALE_SIDES one of kcm,ours (empty: all; a figure not measured prints -); BENCH_SCALE_PROFILE=DIR (absolute) saves each Job server's heap after the stored fill as DIR/<side>-stored-heap.pb.gz and CPU profiles taken during full LISTs through kube-apiserver as DIR/<side>-list-host-cpu.pb.gz (and, ours, -list-server-cpu), and for the first minute of each batch mix as DIR/<side>-<namespace>-host-cpu.pb.gz (and, ours, -server-cpu); BENCH_SCALE_OURS_ARGS and BENCH_SCALE_KCM_ARGS add flags to batch-apiserver and kube-controller-manager (e.g. -v=4: why each sync was queued and what it did), BENCH_SCALE_LOGS=DIR (absolute) keeps every process log of each side in DIR/<side>-<rate>/.
	BENCH_SCALE_RUN=1 BENCH_SCALE=$(BENCH_SCALE) BENCH_SCALE_OUT=$(abspath _output/bench-scale/results.json) \
		BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		$(GO) test -count=1 -v -timeout 12h -run '^TestBenchScale$$' ./test/scale/
	$(GO) run ./hack/benchplot -in $(abspath _output/bench-scale/results.json) -out $(abspath _output/bench-scale/plots)

# How long `make fuzz` runs each fuzz target; FUZZFLAGS adds go test flags
# (e.g. FUZZFLAGS='-parallel 1' on a shared machine).
FUZZTIME  ?= 3m
FUZZFLAGS ?=

fuzz: ## Run each fuzz target for FUZZTIME (default 3m), one after another; a crasher is written to the package's testdata/fuzz/ (keep it: it is then a regression case of `go test`).
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJob$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./pkg/apiserver/
	$(GO) test -run '^$$' -fuzz '^FuzzStatusStrategy$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./pkg/registry/batch/job/

# vet compiles as the test tiers do (no cgo, -trimpath), so it type-checks
# against the packages make build already compiled, not a second copy.
lint: ## go vet, gofmt and staticcheck (hack/lint.sh, staticcheck.conf) of both modules; generated code excluded.
	CGO_ENABLED=0 $(GO) vet -trimpath ./...
	cd cmd/batch-kueue && GOWORK=off CGO_ENABLED=0 $(GO) vet -trimpath ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v -e '^pkg/generated/' -e 'zz_generated')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	bash hack/lint.sh

# VULNDB_VERSION=<golang.org/x/vulndb version> scans against that database
# instead of the newest the module proxy serves.
vulncheck: build kueue-bins ## govulncheck of both modules and of the binaries we ship, against a local Go vulnerability database made from the golang.org/x/vulndb module (hack/vulncheck.sh, cached in _output/vulndb); fails on a vulnerability our code reaches.
	bash hack/vulncheck.sh $(BINARY) $(BIN_DIR)/managedby-conformance $(BIN_DIR)/kubectl-bjob $(BIN_DIR)/batch-kueue

update: ## Regenerate code, gofmt, tidy.
	bash hack/update-codegen.sh
	gofmt -w $$(git ls-files '*.go' | grep -v -e '^pkg/generated/' -e 'zz_generated')
	$(GO) mod tidy
	cd cmd/batch-kueue && GOWORK=off $(GO) mod tidy
	echo "$$(bash hack/codegen-digest.sh)  generated code and its inputs (hack/codegen-digest.sh; make verify skips regenerating while it matches)" > hack/codegen.sum

verify: ## Fail when generated code, formatting or go.mod are stale, or a tool module's shared dependencies drift from the server's.
	bash hack/verify-codegen.sh
	bash hack/verify-shared-versions.sh

clean:
	rm -rf _output/bin/batch-apiserver $(IMAGE_DIR)

# Hosts older than 1.37 (docs/compatibility.md). compat-bins builds
# kube-apiserver and kube-controller-manager of every hack/compat/v1.*
# module into _output/compat/<version>/ (cached like e2e-bins); test-compat
# runs the aggregation and controller scenarios of the e2e tier against each
# of them and against 1.37.2, writes _output/compat/results.json and prints
# host version x scenario. COMPAT_HOSTS="v1.34 v1.37" runs only those.
# Not part of make test.

compat-bins: ## Build kube-apiserver and kube-controller-manager 1.33.13, 1.34.4, 1.35.4, 1.36.3 (or those of COMPAT_HOSTS) into _output/compat (cached; a cold build is 15-30 min each).
	bash hack/build-compat-bins.sh $(COMPAT_HOSTS)

test-compat: build e2e-bins kueue-bins compat-bins ## The aggregation and controller e2e scenarios against hosts 1.33 to 1.37: _output/compat/results.json and a host x scenario table; on the hosts of KUEUE_HOSTS (default v1.34) also the single-cluster Kueue scenarios (test/e2e/kueue).
	BATCH_APISERVER_BIN=$(abspath $(BINARY)) E2E_BIN_DIR=$(abspath $(BIN_DIR)) \
		COMPAT_HOSTS="$(COMPAT_HOSTS)" bash hack/compat/test-compat.sh
