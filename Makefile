# Landlord — build, generate, test, run.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

KUBE_VERSION ?= 1.37.2
ETCD_VERSION ?= 3.7.3
CONTROLLER_TOOLS_VERSION ?= v0.23.0
# Helm, built from the Go module proxy, renders the chart in test/install (which names the same
# version).
HELM_VERSION ?= v3.22.0
# The release tools, built from the Go module proxy like Helm (test/install names the same
# versions): GoReleaser builds the CLI's release, cyclonedx-gomod writes its SBOMs, actionlint
# checks the release workflow.
GORELEASER_VERSION ?= v2.15.1
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
ACTIONLINT_VERSION ?= v1.7.12
# golangci-lint v2, built from the Go module proxy like the other tools (.golangci.yml).
GOLANGCI_LINT_VERSION ?= v2.15.0

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
HELM := $(BIN)/helm-$(HELM_VERSION)
GORELEASER := $(BIN)/goreleaser-$(GORELEASER_VERSION)
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
ACTIONLINT := $(BIN)/actionlint-$(ACTIONLINT_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
ENVTEST_ASSETS := $(BIN)/k8s/$(KUBE_VERSION)
export KUBEBUILDER_ASSETS := $(ENVTEST_ASSETS)

# Three packages at a time: each envtest package runs its own control plane (and database
# servers), and its tests mostly wait on them (Eventually polls every 50 ms, not gomega's 10), so
# a 2-core machine runs three side by side at about 1.3 cores busy. The integration suite
# (test/integration) takes about 7.5 minutes, and the other packages fill the two other lanes
# beside it (-p 2: about 11.5 minutes, as one lane then holds everything else; -p 1: over 20).
GO_TEST_FLAGS ?= -timeout 60m -p 3
# The longest packages are named first: go test starts packages in the order it is given them,
# and ./... alone would start the integration suite (the longest, about 7 minutes) after most of
# the others, adding their time to its own.
TEST_FIRST := ./test/integration ./test/upgrade ./cmd/landlordctl ./test/faults
BENCH_TENANTS ?= 1000
BENCH_POSTGRES ?= 1
# The window of make bench-backups's schedule.
BENCH_BACKUP_WINDOW ?= 5m
BENCH_MOVE_SIZES ?= 10,100,1000
BENCH_DRAIN_TENANTS ?= 100
BENCH_DRAIN_CONCURRENCY ?= 1
BENCH_COMPONENT ?= true
# 200 claims, so that their p99 is not their maximum; BENCH_CLAIMS_BESIDE tenants are created
# beside them, as a mass create would.
BENCH_CLAIMS ?= 200
BENCH_CLAIMS_BESIDE ?= $(BENCH_TENANTS)
# The raw-write baseline's concurrencies: a plain client creates what Landlord wrote, one run
# each, and the report divides Landlord's times by the fastest.
BENCH_BASELINE ?= 16,64
# A soak after the other phases, e.g. 30m (off when empty).
BENCH_SOAK ?=
# How long the operator is left alone after the shared-secret change, for its memory at steady state (e.g. 5m).
BENCH_SETTLE ?=
# Extra flags, e.g. BENCH_FLAGS="-profile bin/bench-profiles -concurrency 16".
BENCH_FLAGS ?=
# The release this checkout is: the file VERSION, the one place it is written. The chart, the
# operator's image in config/, the install lines of the README, docs/getting-started.md and docs/upgrading.md, the Flux and
# Argo CD examples and CHANGELOG.md name the same (make set-version writes them all; hack/release's tests
# fail naming a file that drifts). hack/release/version.go says why a file.
RELEASE_VERSION := $(shell cat VERSION)
RELEASE_IMAGE ?= ghcr.io/landlord-dev/landlord
IMG ?= $(RELEASE_IMAGE):$(RELEASE_VERSION)
# Stamped into the image's binary (internal/version); empty falls back to what Go records.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null)
# make release builds VERSION given on its command line, or the file VERSION's release.
RELEASE := $(if $(filter command line,$(origin VERSION)),$(VERSION),$(RELEASE_VERSION))
# The pushed image's digest (sha256:...), when known: dist/install.yaml then pins it.
DIGEST ?=
# Every time inside the release's archives: the commit's, so a rebuild gives the same bytes.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# The Go module proxy the image build downloads modules from: the only network it needs.
GOPROXY ?= $(shell go env GOPROXY)
PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: all
all: build

##@ Development

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and the operator's RBAC from the markers.
	$(CONTROLLER_GEN) rbac:roleName=landlord-manager crd:maxDescLen=400 paths="./..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy functions.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: api-docs
api-docs: manifests ## Generate the API reference (docs/api.md) from the CRDs.
	go run ./hack/apidocs --crd-dir config/crd/bases --out docs/api.md

.PHONY: cli-docs
cli-docs: ## Generate the landlordctl reference (docs/cli.md) from its commands.
	go test ./cmd/landlordctl -run '^TestTheCLIReferenceIsWhatTheCommandsSay$$' -count=1 -update

.PHONY: chart
chart: ## Generate the Helm chart's CRDs, RBAC, policies and values from config/ (charts/landlord); needs no Kubernetes build.
	go run ./hack/chart

.PHONY: config-docs
config-docs: ## Generate the configuration reference in docs/configuration.md from internal/config.
	go run ./hack/configdocs

.PHONY: metrics-docs
metrics-docs: ## Generate the metrics reference in docs/metrics.md from the collectors the operator registers.
	go run ./hack/metricsdocs

.PHONY: reasons-docs
reasons-docs: ## Generate the condition and event reasons reference (docs/reasons.md) from api/v1alpha1 and internal/.
	go run ./hack/reasonsdocs

.PHONY: verify-generated
verify-generated: manifests generate api-docs cli-docs config-docs metrics-docs reasons-docs chart ## Fail when committed generated files are stale.
	@git diff --exit-code -- api config docs charts || { echo "generated files are stale: run 'make manifests generate api-docs cli-docs config-docs metrics-docs reasons-docs chart' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- charts)" || { git status --porcelain -- charts; echo "the chart has files not committed: run 'make chart' and commit"; exit 1; }

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: control-plane
control-plane: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/kwok $(ENVTEST_ASSETS)/metrics-server ## Build the local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, metrics-server) from source into bin/k8s (once).

# The script builds whatever is missing, so each target is the same call.
$(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/kwok $(ENVTEST_ASSETS)/kubectl $(ENVTEST_ASSETS)/metrics-server:
	KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/build-control-plane.sh

.PHONY: databases
databases: ## Install PostgreSQL and MariaDB (Debian packages) when missing; tests start their own servers.
	hack/install-databases.sh

.PHONY: test
test: manifests generate chart vet control-plane databases $(HELM) $(GORELEASER) $(CYCLONEDX_GOMOD) $(ACTIONLINT) ## Run the whole test suite on a real local cluster and real database servers.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go test $(GO_TEST_FLAGS) $(TEST_FIRST) ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Lint the code (.golangci.yml: the kubebuilder set, predeclared names, depguard's package rules); .ci/run calls it.
	$(GOLANGCI_LINT) run ./...

.PHONY: test-unit
test-unit: ## The inner loop: every test that needs no local cluster and no database server (go test -short ./...); the object-store and key-service tests still run, on in-process servers.
	go test -short $(GO_TEST_FLAGS) ./...

.PHONY: test-release
test-release: $(HELM) $(GORELEASER) $(CYCLONEDX_GOMOD) ## Build the release twice and compare every artefact's checksum (test/install, build tag release); the first run on a machine compiles for several minutes.
	go test $(GO_TEST_FLAGS) -count=1 -tags release -run TestTheReleaseIsReproducible ./test/install

# The fault suite's SIGKILL scenario runs 10 rounds under `make test`; this many here.
FAULT_ROUNDS_LONG ?= 30

.PHONY: test-faults-long
test-faults-long: manifests generate control-plane databases ## Run the fault suite (test/faults) with FAULT_ROUNDS_LONG (30) SIGKILL rounds instead of make test's 10; LANDLORD_FAULT_* variables pass through (docs/testing.md).
	LANDLORD_FAULT_ROUNDS=$(FAULT_ROUNDS_LONG) go test $(GO_TEST_FLAGS) -count=1 ./test/faults

.PHONY: bench
bench: control-plane databases ## Create, resync, restart and fan a secret out to BENCH_TENANTS tenants, claim spares beside a mass create, measure the raw-write baseline, then create them split between two shards; report requests, time, CPU and memory (docs/benchmarks.md).
	go run ./test/bench -tenants $(BENCH_TENANTS) -postgres $(BENCH_POSTGRES) -component=$(BENCH_COMPONENT) -claims $(BENCH_CLAIMS) \
		-claims-beside $(BENCH_CLAIMS_BESIDE) -baseline $(BENCH_BASELINE) $(if $(BENCH_SOAK),-soak $(BENCH_SOAK)) $(if $(BENCH_SETTLE),-settle $(BENCH_SETTLE)) \
		-json $(BIN)/bench-$(BENCH_TENANTS).json $(BENCH_FLAGS)
	@# The same tenants split between two operator shards, each its own process.
	go run ./test/bench -tenants $(BENCH_TENANTS) -postgres $(BENCH_POSTGRES) -component=$(BENCH_COMPONENT) -shards 2 \
		-json $(BIN)/bench-$(BENCH_TENANTS)-2-shards.json $(BENCH_FLAGS)

.PHONY: bench-migrations
bench-migrations: control-plane databases ## Create BENCH_TENANTS tenants with a database on one of two PostgreSQL servers, then roll their component out to a version without migrations and to one with a pre migration; report both, and the most migration Jobs each server ran at once (docs/benchmarks.md).
	go run ./test/bench -tenants $(BENCH_TENANTS) -postgres 1 -component=true -rollout-migrations -noop-reconciles 1 \
		-json $(BIN)/migrations-$(BENCH_TENANTS).json $(BENCH_FLAGS)

.PHONY: bench-backups
bench-backups: control-plane databases ## Create BENCH_TENANTS tenants with a database on one of two PostgreSQL servers, then back them all up with one schedule over BENCH_BACKUP_WINDOW, each Job run for real; report the time to the last success, the most Jobs each server ran at once, writes per backup and memory (docs/benchmarks.md).
	go run ./test/bench -tenants $(BENCH_TENANTS) -postgres 1 -backups -backup-window $(BENCH_BACKUP_WINDOW) -noop-reconciles 1 \
		-json $(BIN)/backups-$(BENCH_TENANTS).json $(BENCH_FLAGS)

.PHONY: bench-moves
bench-moves: databases ## Copy databases of BENCH_MOVE_SIZES MB between two real servers of each engine, as a database move's Job does; report dump, load and comparison times (docs/benchmarks.md).
	go test -run '^$$' -bench BenchmarkCopyBetweenServers -benchtime 1x -timeout 2h ./internal/backup/ -copy-sizes-mb $(BENCH_MOVE_SIZES)

.PHONY: bench-drain
bench-drain: control-plane databases ## Drain a PostgreSQL server of BENCH_DRAIN_TENANTS small tenants with landlordctl db drain --concurrency BENCH_DRAIN_CONCURRENCY (each move confirmed) on the whole local cluster; report the time (docs/benchmarks.md).
	LANDLORD_DRAIN_TENANTS=$(BENCH_DRAIN_TENANTS) LANDLORD_DRAIN_CONCURRENCY=$(BENCH_DRAIN_CONCURRENCY) go test -count=1 -v -run '^TestDrainingAServerMovesEachOfItsTenantsOffAndLeavesItEmpty$$' -timeout 2h ./test/integration/tenantbackup/ | grep -E 'drained|^(---|ok|FAIL)'

.PHONY: bench-plots
bench-plots: ## Plot the reports make bench wrote (bin/bench-*.json) as SVG into docs/img: figures against N across sizes, and memory over a soak (docs/benchmarks.md).
	go run ./hack/benchplot -out docs/img $(wildcard $(BIN)/bench-*.json)

##@ Build and run

.PHONY: dev-databases
dev-databases: databases ## Next to `make run`: start local PostgreSQL and MariaDB and register them as DatabaseServers.
	go run ./hack/devdatabases

.PHONY: build
build: ## Build the manager binary, landlordctl, and landlordctl as the kubectl plugin kubectl-landlord with its completion link kubectl_complete-landlord.
	CGO_ENABLED=0 go build -o $(BIN)/landlord ./cmd/landlord
	CGO_ENABLED=0 go build -o $(BIN)/landlordctl ./cmd/landlordctl
	cp $(BIN)/landlordctl $(BIN)/kubectl-landlord
	ln -sf kubectl-landlord $(BIN)/kubectl_complete-landlord

# Where `make run` runs the operator: `embedded` (the default) is the whole local cluster in
# bin/embedded, whatever kubeconfig you have; `current` is your kubeconfig's current context, named
# before the operator starts, with its secret store in bin/run/<context>/ rather than the
# production path /var/lib/landlord.
CLUSTER ?= embedded
RUN_FLAGS := --metrics-bind-address :8080 --metrics-insecure

.PHONY: run
run: ## Run the operator on a whole local cluster (never your kubeconfig's); CLUSTER=current runs it against your kubeconfig's current context.
ifeq ($(CLUSTER),embedded)
run: control-plane
	go run ./cmd/landlord --embedded=always --config config/manager/landlord.yaml $(RUN_FLAGS) --embedded-dir $(BIN)/embedded
else ifeq ($(CLUSTER),current)
run: $(ENVTEST_ASSETS)/kubectl
	@context=$$($(ENVTEST_ASSETS)/kubectl config current-context) || { echo "CLUSTER=current: your kubeconfig has no current context"; exit 1; }; \
	server=$$($(ENVTEST_ASSETS)/kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'); \
	dir=$(BIN)/run/$$context; mkdir -p $$dir; \
	user=$$($(ENVTEST_ASSETS)/kubectl auth whoami -o jsonpath='{.status.userInfo.username}') || exit 1; \
	$(ENVTEST_ASSETS)/kubectl get namespace landlord-system >/dev/null 2>&1 || $(ENVTEST_ASSETS)/kubectl create namespace landlord-system || exit 1; \
	sed -e 's|/var/lib/landlord/secrets|'"$$dir"'/secrets|' -e 's|^  identity: .*|  identity: "'"$$user"'"|' config/manager/landlord.yaml > $$dir/landlord.yaml; \
	echo "Landlord runs against context $$context ($$server) as $$user; its secret store is $$dir/secrets."; \
	go run ./cmd/landlord --embedded=never --config $$dir/landlord.yaml $(RUN_FLAGS) \
		--leader-elect --leader-election-namespace landlord-system --wait-for-leader=false
else
run:
	@echo "CLUSTER=$(CLUSTER): use CLUSTER=embedded (the default, the local cluster) or CLUSTER=current (your kubeconfig's current context)"; exit 1
endif

DOCKER_BUILD_ARGS = --build-arg GOPROXY=$(GOPROXY) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT)

.PHONY: docker-build
docker-build: ## Build the container image IMG for this machine's platform.
	docker build $(DOCKER_BUILD_ARGS) -t $(IMG) .

.PHONY: docker-buildx
docker-buildx: ## Build IMG for every platform of PLATFORMS and push it.
	docker buildx build $(DOCKER_BUILD_ARGS) --platform $(PLATFORMS) --push -t $(IMG) .

.PHONY: build-installer
build-installer: manifests ## Write dist/install.yaml: CRDs, RBAC, policies and the Deployment of image IMG, for kubectl apply --server-side; needs no Kubernetes build.
	hack/build-installer.sh $(IMG) dist/install.yaml

.PHONY: release
release: $(GORELEASER) $(CYCLONEDX_GOMOD) $(HELM) ## Write a release into dist/ (make release [VERSION=vX.Y.Z] [DIGEST=sha256:...]): installer, CRDs, chart, CLI archives, SBOMs, checksums, krew manifest, notes; reproducible, needs no Kubernetes build.
	GORELEASER=$(GORELEASER) CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) HELM=$(HELM) RELEASE_IMAGE=$(RELEASE_IMAGE) \
		COMMIT=$(COMMIT) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) hack/release.sh $(RELEASE) $(DIGEST)

.PHONY: set-version
set-version: ## Make VERSION=vX.Y.Z the release: write the file VERSION and every file that names the release (then date its CHANGELOG section).
	@test "$(origin VERSION)" = "command line" || { echo "usage: make set-version VERSION=vX.Y.Z"; exit 1; }
	go run ./hack/release set-version $(VERSION)

.PHONY: install
install: manifests ## Install the CRDs into the current cluster.
	$(ENVTEST_ASSETS)/kubectl apply --server-side -k config/crd

.PHONY: deploy
deploy: build-installer ## Deploy the operator (image IMG) into the current cluster: dist/install.yaml.
	$(ENVTEST_ASSETS)/kubectl apply --server-side -f dist/install.yaml

.PHONY: helm
helm: $(HELM) ## Build Helm from the Go module proxy into bin/ (once).

$(HELM):
	@mkdir -p $(BIN)/.helm-$(HELM_VERSION)
	GOBIN=$(BIN)/.helm-$(HELM_VERSION) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/.helm-$(HELM_VERSION)/helm $(HELM) && rmdir $(BIN)/.helm-$(HELM_VERSION)

.PHONY: release-tools goreleaser cyclonedx-gomod actionlint
release-tools: goreleaser cyclonedx-gomod actionlint ## Build GoReleaser, cyclonedx-gomod and actionlint from the Go module proxy into bin/ (once).
goreleaser: $(GORELEASER)
cyclonedx-gomod: $(CYCLONEDX_GOMOD)
actionlint: $(ACTIONLINT)

$(GORELEASER):
	hack/go-install-tool.sh github.com/goreleaser/goreleaser/v2 $(GORELEASER_VERSION) $@

$(CYCLONEDX_GOMOD):
	hack/go-install-tool.sh github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod $(CYCLONEDX_GOMOD_VERSION) $@

$(ACTIONLINT):
	hack/go-install-tool.sh github.com/rhysd/actionlint/cmd/actionlint $(ACTIONLINT_VERSION) $@

$(GOLANGCI_LINT):
	hack/go-install-tool.sh github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION) $@

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(BIN)/controller-gen $(CONTROLLER_GEN)
