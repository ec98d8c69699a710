#!/usr/bin/env bash
# Packs both SDKs into OUT ($1): the TypeScript package's tarball
# (paddock-dev-sdk-VERSION.tgz, built by npm pack from the lock file's
# compiler) and the Python wheel (paddock_sdk-VERSION-py3-none-any.whl,
# built by pip from the in-tree backend, offline). paddockd serves them at
# /sdk/ from its cli_dir; testbed/dist.sh and testbed/up.sh call this.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
sdk=$(cd "$(dirname "$0")" && pwd)
command -v npm >/dev/null || { echo "sdk/pack.sh: npm is needed for the TypeScript SDK" >&2; exit 1; }
command -v python3 >/dev/null || { echo "sdk/pack.sh: python3 (with pip) is needed for the Python SDK" >&2; exit 1; }
(
  cd "$sdk/typescript"
  [ -x node_modules/.bin/tsc ] || npm ci --no-audit --no-fund >&2
  npm pack --silent --pack-destination "$out" >/dev/null
)
PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip wheel --quiet --no-deps --no-index -w "$out" "$sdk/python" >&2
ls "$out"/paddock-dev-sdk-*.tgz "$out"/paddock_sdk-*-py3-none-any.whl
