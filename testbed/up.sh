#!/usr/bin/env bash
# Runs Paddock on this machine in local mode: installs and starts a Docker
# engine if none answers, builds the box image, builds paddock and paddockd
# into ./bin, starts paddockd in the background (state in
# /var/lib/paddock-local, log in /var/log/paddockd-local.log) and prints the
# login command. Running it again restarts paddockd with the same state.
#
# Settings (environment): PADDOCK_LISTEN (default 127.0.0.1:8760),
# PADDOCK_STATE_DIR (default /var/lib/paddock-local).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

[ "$(id -u)" = 0 ] || { echo "up.sh: run as root (it installs and starts the Docker engine)" >&2; exit 1; }
command -v go >/dev/null || { echo "up.sh: Go 1.26 is needed on PATH" >&2; exit 1; }

bash testbed/engine.sh
image=$(bash testbed/images.sh)
mkdir -p bin/cli
# Builds carry their version; the CLI for every system goes to bin/cli,
# where paddockd serves it (/cli/).
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
ldflags="-X github.com/paddock-dev/paddock/appliance/version.Version=$version"
go build -ldflags "$ldflags" -o bin/ ./cmd/paddock ./cmd/paddockd
for os in linux darwin windows; do
  for arch in amd64 arm64; do
    ext=; [ "$os" = windows ] && ext=.exe
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w $ldflags" -o "bin/cli/paddock-$os-$arch$ext" ./cmd/paddock
  done
done
# The SDKs' packages beside them (served at /sdk/), where npm and python3
# are there to build them.
if command -v npm >/dev/null && command -v python3 >/dev/null; then
  rm -f bin/cli/paddock-dev-sdk-*.tgz bin/cli/paddock_sdk-*.whl
  bash sdk/pack.sh bin/cli >/dev/null
else
  echo "up.sh: no npm or python3 here: the server serves no SDK packages at /sdk/ (sdk/pack.sh builds them)" >&2
fi
(cd bin/cli && shopt -s nullglob && sha256sum paddock-* paddock_sdk-* >SHA256SUMS)

state=${PADDOCK_STATE_DIR:-/var/lib/paddock-local}
listen=${PADDOCK_LISTEN:-127.0.0.1:8760}
pidfile=/run/paddockd-local.pid
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  kill "$(cat "$pidfile")"
  while kill -0 "$(cat "$pidfile")" 2>/dev/null; do sleep 0.2; done
fi
log=/var/log/paddockd-local.log
# The log holds the owner token: for root alone, like the state.
umask 077
touch "$log" && chmod 600 "$log"
nohup bin/paddockd --local --listen "$listen" --state-dir "$state" \
  --socket /run/paddock/paddock-local.sock --runtime runc --image "$image" --cli-dir "$root/bin/cli" \
  >>"$log" 2>&1 &
echo $! >"$pidfile"

for _ in $(seq 1 100); do
  if [ -s "$state/local.token" ] && curl -fsS -o /dev/null -H "Authorization: Bearer $(cat "$state/local.token")" "http://$listen/v1/whoami" 2>/dev/null; then
    cat <<MSG
paddockd is running (pid $(cat "$pidfile"), log $log).

  export PATH=$root/bin:\$PATH
  paddock login http://$listen --token $(cat "$state/local.token")
  paddock new --type small --ttl 3600

MSG
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "up.sh: paddockd exited; last lines of $log:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "up.sh: paddockd did not answer on $listen; see $log" >&2
exit 1
