# The two commands a new user needs: `make demo` and `make test`.
BIN        ?= _output
PLUGIN     := velero-plugin-for-aws-async
# The image's tag, and the version stamped into the binary (`velero-plugin-for-aws-async version`):
# `make image IMAGE_TAG=v0.1.0` builds a v0.1.0 that says so. Default: git describe of the source.
GIT_VERSION = $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_TAG  ?= $(GIT_VERSION)
VERSION    ?= $(IMAGE_TAG)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# `make container` pushes $(IMAGE): set REGISTRY to yours (the README's registry.example.com).
REGISTRY   ?=
IMAGE      ?= $(REGISTRY)/$(PLUGIN):$(IMAGE_TAG)
PLATFORMS  ?= linux/amd64,linux/arm64
FUZZTIME   ?= 10s
SEEDS      ?= 20000
VERSION_PKG := github.com/velero-async/velero-plugin-for-aws/internal/version

.PHONY: all build test demo bench fault explore mutate fuzz e2e generate image container clean

all: build

## build: the plugin binary (stamped with VERSION and COMMIT) and the EC2 simulator, into $(BIN)/
build:
	go build -ldflags "-X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)" -o $(BIN)/$(PLUGIN) .
	go build -o $(BIN)/ec2sim ./internal/testkit/cmd/ec2sim

## test: vet and every test (unit, simulator, plugin binary, Velero harness integration)
test:
	go vet ./...
	go test -timeout 30m ./...

## demo: a 50-volume backup with copies to a second region and locked vault copies in a second account, a restore in the copy region, the deletion and `check`, on the bundled EC2 simulator (the first run compiles for minutes)
demo:
	@echo "Compiling the demo's launcher (seconds; up to a minute the first time on a busy machine), which then says what comes next…"
	go run ./internal/testkit/cmd/demo $(DEMO_FLAGS)

## bench: the standard scenario for this plugin and two baselines; figures to stdout and bench-results.json
bench:
	go run ./internal/testkit/cmd/bench -out bench-results.json $(BENCH_FLAGS)

## fault: the fault suite (throttling storm, ambiguous failures, eventual consistency, plugin kills, snapshots in error, deletions, reused names, an untaggable source, a cancelled operation, quotas); prints the Reliability table and fails on any failed operation, duplicate or leak. FAULT_FLAGS='-skip storm' leaves out the 20-minute storm
fault:
	go run ./internal/testkit/cmd/fault $(FAULT_FLAGS)

## explore: the explorer for $(SEEDS) new seeds (go test runs its fixed budget of fixed seeds): seeded interleavings of Velero, other installs and tools and a faulty EC2, the users' promises checked after every step; a failure prints its seed, a one-line replay command and the shortest trace
explore:
	go test -count=1 -v -timeout 0 -run '^TestExplore$$' ./internal/testkit/explore/ -rapid.checks=$(SEEDS) -rapid.seed=$$(date +%s%N)

## mutate: the explorer's strength: each one-rule mutant (internal/testkit/cmd/mutate) applied alone, the explorer run on it with go test's fixed seeds; prints killed or survived per mutant and the kill rate, and fails unless every one is killed. MUTANTS=name,name runs some
mutate:
	go run ./internal/testkit/cmd/mutate -mutants '$(MUTANTS)'

## e2e: the plugin in a real Velero server, VELERO_VERSION=v1.18.3 (default) or v1.17.2 (kube-apiserver v1.34.4, etcd, upstream AWS plugin for the BSL); needs etcd (apt-get install -y etcd-server)
# On a failure, the test's own messages (not its step log) are repeated at the end, where a CI
# log's tail shows them.
e2e:
	@log=$$(mktemp); \
	{ E2E_VELERO_VERSION=$(or $(VELERO_VERSION),$(E2E_VELERO_VERSION),v1.18.3) go test -tags e2e -v -count=1 -timeout 40m ./internal/testkit/e2e/ 2>&1 || echo "e2e: go test exited $$?"; } | tee $$log; \
	if grep -q '^e2e: go test exited' $$log; then \
	  echo '---- e2e failures: the failed subtests and their messages ----'; \
	  grep -E -e '--- FAIL' -e '_test\.go:[0-9]+: ' $$log | grep -v -E '_test\.go:[0-9]+: ([0-9]{2}:[0-9]{2}:[0-9]{2} |stopped |all processes stopped)' | tail -60; \
	  rm -f $$log; exit 1; \
	fi; rm -f $$log

## fuzz: each fuzz test for $(FUZZTIME)
fuzz:
	@set -e; for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## generate: regenerate the EC2 mock
generate:
	go generate ./...

## image: the multi-arch image for `velero plugin add` without Docker: an OCI image layout in $(BIN)/image, its index named $(IMAGE_TAG); push it with `crane push` or `skopeo copy --all`
image:
	go run ./internal/cmd/image -out $(BIN)/image -platforms $(PLATFORMS) -tag $(IMAGE_TAG) -version $(VERSION) -commit $(COMMIT)

## container: the multi-arch image for `velero plugin add`, built with docker buildx and pushed as $(IMAGE): make container REGISTRY=registry.example.com IMAGE_TAG=v0.1.0
container:
	@test -n "$(REGISTRY)" || { echo "make container pushes \$$(REGISTRY)/$(PLUGIN):\$$(IMAGE_TAG): set REGISTRY (e.g. REGISTRY=registry.example.com IMAGE_TAG=v0.1.0)"; exit 2; }
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) --push .

clean:
	rm -rf $(BIN) bench-results.json
