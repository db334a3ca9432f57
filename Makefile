# Landlord — build, generate, test, run.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

KUBE_VERSION ?= 1.37.2
ETCD_VERSION ?= 3.7.3
CONTROLLER_TOOLS_VERSION ?= v0.23.0

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
ENVTEST_ASSETS := $(BIN)/k8s/$(KUBE_VERSION)
export KUBEBUILDER_ASSETS := $(ENVTEST_ASSETS)

# One package at a time: each envtest package runs its own control plane (and database
# servers), and on a 2-core machine running them side by side starves their watches.
GO_TEST_FLAGS ?= -timeout 30m -p 1
BENCH_TENANTS ?= 1000
BENCH_POSTGRES ?= 1
BENCH_COMPONENT ?= true
BENCH_CLAIMS ?= 50
# Extra flags, e.g. BENCH_FLAGS="-profile bin/bench-profiles -concurrency 16".
BENCH_FLAGS ?=
IMG ?= landlord:dev

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

.PHONY: verify-generated
verify-generated: manifests generate ## Fail when committed generated files are stale.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make manifests generate' and commit"; exit 1; }

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: control-plane
control-plane: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/kwok ## Build the local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok) from source into bin/k8s (once).

# The script builds whatever is missing, so each target is the same call.
$(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/kwok:
	KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/build-control-plane.sh

.PHONY: databases
databases: ## Install PostgreSQL and MariaDB (Debian packages) when missing; tests start their own servers.
	hack/install-databases.sh

.PHONY: test
test: manifests generate vet control-plane databases ## Run the whole test suite on a real local cluster and real database servers.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go test $(GO_TEST_FLAGS) ./...

.PHONY: bench
bench: control-plane databases ## Create, resync, restart and fan a secret out to BENCH_TENANTS tenants; report requests, time, CPU and memory (docs/benchmarks.md).
	go run ./test/bench -tenants $(BENCH_TENANTS) -postgres $(BENCH_POSTGRES) -component=$(BENCH_COMPONENT) -claims $(BENCH_CLAIMS) \
		-json $(BIN)/bench-$(BENCH_TENANTS).json $(BENCH_FLAGS)

##@ Build and run

.PHONY: dev-databases
dev-databases: databases ## Next to `make run`: start local PostgreSQL and MariaDB and register them as DatabaseServers.
	go run ./hack/devdatabases

.PHONY: build
build: ## Build the manager binary, landlordctl, and landlordctl as the kubectl plugin kubectl-landlord.
	CGO_ENABLED=0 go build -o $(BIN)/landlord ./cmd/landlord
	CGO_ENABLED=0 go build -o $(BIN)/landlordctl ./cmd/landlordctl
	cp $(BIN)/landlordctl $(BIN)/kubectl-landlord

.PHONY: run
run: control-plane ## Run the operator against the current kubeconfig, or a whole local cluster when there is none.
	go run ./cmd/landlord --config config/manager/landlord.yaml --metrics-bind-address :8080 --metrics-insecure --embedded-dir $(BIN)/embedded

.PHONY: docker-build
docker-build: ## Build the container image.
	docker build -t $(IMG) .

.PHONY: install
install: manifests ## Install the CRDs into the current cluster.
	$(ENVTEST_ASSETS)/kubectl apply --server-side -k config/crd

.PHONY: deploy
deploy: manifests ## Deploy the operator into the current cluster.
	$(ENVTEST_ASSETS)/kubectl apply --server-side -k config/default

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(BIN)/controller-gen $(CONTROLLER_GEN)
