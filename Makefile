# mini-VNFM — build, run and test. `make help` lists the targets.

GO        ?= go
BIN       := bin/vnfm
PKG       := ./cmd/vnfm
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# The race detector is on by default; RACE= turns it off for a quicker run
# (measured on the 2-core CI VM with a warm build cache: 34 s vs 21 s for ./...).
RACE      ?= -race
TESTFLAGS ?=
# Test packages run 4 at a time on 2 cores: the long ones (test/e2e, test/cli,
# the RealHeat tests in internal/infra/openstack) mostly wait on SSH hosts,
# Heat and polling, so overlapping them shortens the run; -timeout is a hang
# guard per package, not a goal (the RealHeat driver scenarios alone take
# well over 10 min here).
TESTP     ?= 4
SHELL_SCRIPTS := $(wildcard scripts/*.sh internal/testhosts/*.sh) .ci/run mgmtdrivers/kubeadm/gen_script.sh

.DEFAULT_GOAL := help
.PHONY: help build run test lint bench migrate-up image clean samples demo request walkthrough fuzz kube

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the static binaries: bin/vnfm, the Kubernetes stand-in bin/k8s-standin, bin/openstack-sim
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) $(PKG)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/k8s-standin ./cmd/k8s-standin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/openstack-sim ./cmd/openstack-sim

run: build ## install the missing Debian packages of internal/deps/packages.list, build the Kubernetes binaries once (make kube), then `bin/vnfm serve` (embedded PostgreSQL and cloud unless DATABASE_URL is set)
	scripts/ensure-deps.sh
	$(GO) run ./cmd/kubeworld build
	$(BIN) serve

kube: ## build the real Kubernetes binaries of the test world once per machine (~6-8 min on 2 cores; cached: `go run ./cmd/kubeworld path`)
	$(GO) run ./cmd/kubeworld build

test: kube ## run all tests: shell scripts (bats), every fuzz target briefly, then Go (real PostgreSQL; TEST_DATABASE_URL for another server)
	bats test/bats
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(or $(FUZZTIME),5s)
	$(GO) test -count=1 -p $(TESTP) -timeout 60m $(RACE) $(TESTFLAGS) ./...

lint: ## gofmt, go vet, shellcheck
	@unformatted="$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	shellcheck $(SHELL_SCRIPTS)

bench: ## measure engine latency and rate, API reads vs pgbench, big filtered lists, SSH fan-out, cluster build vs critical path (root, < 10 min; docs/benchmarks.md): table, bench/results/*.json
	$(GO) build -o bin/vnfm-bench ./cmd/vnfm-bench
	bin/vnfm-bench -out bench/results $(BENCHFLAGS)

fuzz: ## run every `go test -fuzz` target of the repository for FUZZTIME each (default 10s; scripts/fuzz.sh)
	GO=$(GO) scripts/fuzz.sh $(or $(FUZZTIME),10s)

demo: ## drive a running `make run` through a cluster's whole lifecycle and a CNF's on it, with live progress (PACKAGE=<sample>, default kubeadm-ha; PACKAGE=list lists them; DEMOFLAGS=-cnf=false: no CNF)
	@CGO_ENABLED=0 $(GO) build -o bin/vnfm-demo ./cmd/vnfm-demo
	bin/vnfm-demo -package $(or $(PACKAGE),kubeadm-ha) $(DEMOFLAGS)

request: ## print the complete instantiate request of sample PACKAGE (default kubeadm-ha) for the running make run's cloud
	@CGO_ENABLED=0 $(GO) build -o bin/vnfm-demo ./cmd/vnfm-demo
	@bin/vnfm-demo -package $(or $(PACKAGE),kubeadm-ha) -print-request

walkthrough: ## run the README's walk-through NAME (curl, default; tacker) as written, against a running make run
	scripts/readme-walkthrough.sh $(or $(NAME),curl)

samples: ## zip the sample VNF packages under samples/ into bin/samples/*.zip (CSARs with TOSCA.meta hashes)
	scripts/make-samples.sh bin/samples

migrate-up: build ## apply pending migrations (DATABASE_URL, else the embedded PostgreSQL in VNFM_DATA_DIR)
	$(BIN) migrate up

image: ## build the container image mini-vnfm:$(VERSION) (needs a Docker engine)
	docker build --build-arg VERSION=$(VERSION) -t mini-vnfm:$(VERSION) .

clean: ## remove build output (keeps the embedded database in .vnfm/)
	rm -rf bin/ coverage*
