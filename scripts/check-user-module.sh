#!/usr/bin/env bash
# check-user-module.sh: the library module stays lean. Builds a throwaway user
# module in a temp dir that imports every library package of the root module
# (go list ./... less internal/, cmd/ and main packages), with a replace to
# this checkout, runs go mod tidy there and fails if `go list -m all` shows a
# docker module (docker/docker, ory/dockertest, ...): the container backend
# of the test harness lives in internal/redistest/docker, a module of its own.
#
# Works offline from the module cache: go.sum is seeded from the root's, and
# when tidy cannot reach GOPROXY it is retried with GOPROXY=off.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
root=$(pwd)
modpath=$($GO list -m)

pkgs=$($GO list -f '{{if and .GoFiles (ne .Name "main")}}{{.ImportPath}}{{end}}' ./... |
  grep -v -e '/internal/' -e '/internal$' -e '/cmd/' || true)
if [ -z "$pkgs" ]; then
  echo "check-user-module: no library packages found" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
goversion=$($GO list -m -f '{{.GoVersion}}')
cat >"$tmp/go.mod" <<MOD
module example.com/quorumlock-user

go $goversion

require $modpath v0.0.0

replace $modpath => $root
MOD
cp go.sum "$tmp/go.sum"
{
  echo "// Command user imports every library package of $modpath."
  echo "package main"
  echo
  echo "import ("
  for p in $pkgs; do echo "	_ \"$p\""; done
  echo ")"
  echo
  echo "func main() {}"
} >"$tmp/main.go"

cd "$tmp"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" GOWORK=off
if ! $GO mod tidy >"$tmp/tidy.log" 2>&1; then
  echo "check-user-module: go mod tidy failed with GOPROXY=$($GO env GOPROXY); retrying offline (GOPROXY=off)"
  cat "$tmp/tidy.log"
  GOPROXY=off $GO mod tidy
fi
$GO build ./...
mods=$($GO list -m all)
echo "check-user-module: a module importing $(echo "$pkgs" | wc -l) packages ($(echo $pkgs | sed "s|$modpath/||g")) needs $(($(echo "$mods" | wc -l) - 1)) modules:"
echo "$mods" | sed 1d | sed 's/^/  /'
if bad=$(echo "$mods" | grep -i -e docker -e moby -e containerd -e opencontainers); then
  echo "check-user-module: FAIL: the library pulls in container modules:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "check-user-module: ok, no docker module"
