# quorumlock — the two commands of the README are `make demo` and `make test`.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages of the root module (bench/ and chaos/ are modules of their own).
PKGS        := ./...

.PHONY: demo test check test-stress check-user-module lint fmt bench chaos sim redis-server postgresql example

## demo: acquire and release on embedded memory nodes; REDLOCK_NODES is not read.
## On real nodes: make demo DEMO_NODES=host:port,... (keys under a demo: prefix, removed after)
demo:
	$(GO) run ./cmd/redlock demo $(if $(DEMO_NODES),--nodes $(DEMO_NODES))

# Modules of their own, with a replace to the root: tested and linted by the same targets.
# internal/redistest/docker is the harness's container backend (ory/dockertest), kept out
# of the library's go.mod; examples/ (the five seed systems) needs the pgx driver.
SUBMODULES  := $(patsubst %/go.mod,%,$(wildcard bench/go.mod chaos/go.mod rueidisnode/go.mod promlock/go.mod otellock/go.mod internal/redistest/docker/go.mod examples/go.mod locktest/miniredistest/go.mod))
# go test's -timeout per module: a hang guard, far above a loaded machine's run.
TEST_TIMEOUT ?= 20m

## test: every test of every module, with the race detector, against real redis-server nodes
## (and a real PostgreSQL for sqlfence and the seed examples)
## (chaos/ runs its short fault-injection profile here), the simulator's CI profile (10,000
## schedules, without -race: step "sim"), then a throwaway user module that must not pull in
## any docker module. Keeps going after a failure and ends with one line per module (ok/FAIL,
## duration) and "N passed, M failed"; fails if any module failed.
test: redis-server postgresql
	@GO="$(GO)" TEST_TIMEOUT="$(TEST_TIMEOUT)" scripts/test-all.sh . bounds $(SUBMODULES) sim user-module

## check: the loop to run after every edit (under a minute warm): go vet, then the root
## module's tests that need no server (go test -short, no -race), a line per package and
## the skipped tests by reason; make test runs everything
check:
	@GO="$(GO)" scripts/check.sh

## check-user-module: a module importing every library package needs no docker module
check-user-module:
	@GO="$(GO)" scripts/check-user-module.sh

## test-stress: make test 5 times in a row while stress-ng --cpu 2 keeps both cores busy
## (installs stress-ng with apt-get when missing and root); ends with "N passed, M failed" (runs)
STRESS_RUNS ?= 5
test-stress: redis-server
	@GO="$(GO)" STRESS_RUNS="$(STRESS_RUNS)" MAKE="$(MAKE)" scripts/test-stress.sh

## lint: go vet, gofmt and staticcheck (pinned), no tracked file over 1 MiB, and the Go
## blocks of README.md and docs/migrating.md build (the Quickstart also fails as it should),
## and redlock's go doc is at most 300 lines
lint:
	@scripts/check-tracked-size.sh
	@scripts/check-docs.sh $(CHECK_DOCS_FLAGS)
	$(GO) test -count=1 -run 'TestReadmeSnippetsBuild|TestMigratingSnippetsBuild|TestReadmeQuickstartFailsWithReason' ./internal/readmetest
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@n=$$($(GO) doc -all ./redlock | wc -l); if [ "$$n" -gt 300 ]; then echo "go doc -all ./redlock is $$n lines, over 300: move mechanics to docs/design.md"; exit 1; fi
	$(GO) run $(STATICCHECK) $(PKGS)
	@set -e; for m in $(SUBMODULES); do echo "== $$m"; (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...); done

fmt:
	gofmt -w .

## bench: quorumlock vs redsync, the go-redis floor and the raw floor on redis-server nodes it starts itself;
## short profile (about 8 min on 2 busy cores); FULL=1 for the long one. Results in bench/results/.
bench:
	cd bench && $(GO) run ./cmd/qlbench $(if $(FULL),-full) -out results $(BENCHFLAGS)

## chaos: fault-injection and measuring scenarios on 5 real redis-server nodes with a safety checker (~5 min; fails on an unexpected verdict)
chaos:
	cd chaos && $(GO) run ./cmd/chaos -out chaos-out

## sim: the simulator's long profile: SIM_SCHEDULES (default 1,000,000) fault schedules on
## fake time from seed SIM_FROM (default 1), progress every 10,000, a summary table at the end;
## each failing seed is printed with its one-command replay and its timeline (HTML)
SIM_SCHEDULES ?= 1000000
SIM_FROM      ?= 1
sim:
	cd chaos && SIM_SCHEDULES=$(SIM_SCHEDULES) SIM_FROM=$(SIM_FROM) SIM_PROGRESS=1 $(GO) test -count=1 -v -timeout 0 -run 'TestSimulation$$' ./sim

## redis-server: install it with apt-get when it is missing and we may (root on Debian/Ubuntu);
## otherwise say how. The tests start their own processes from it; none needs to run.
redis-server:
	@if command -v redis-server >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing redis-server (apt-get)"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
			|| echo "could not install redis-server; the Redis tests skip without it (and fail with CI=true)"; \
	else echo "redis-server not found: install it (apt-get install -y redis-server); the Redis tests skip without it"; fi

## postgresql: install it with apt-get when initdb is missing and we may (root on Debian/Ubuntu);
## otherwise say how. The tests start their own servers (internal/pgtest); none needs to run.
postgresql:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing postgresql (apt-get)"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
			|| echo "could not install postgresql; the PostgreSQL tests skip without it (and fail with CI=true)"; \
	else echo "PostgreSQL not found: install it (apt-get install -y postgresql); the PostgreSQL tests skip without it"; fi

## example: run one seed system's example (NAME=cron|lockmanager|leases|executions|status;
## ARGS=... for its flags); each starts its own redis-server nodes (and PostgreSQL) and reads
## no REDLOCK_NODES (cron runs on nodes of your own with ARGS=-addrs host:port,...)
NAME ?= cron
example: redis-server postgresql
	cd examples && $(GO) run ./$(NAME) $(ARGS)
