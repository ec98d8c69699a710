#!/usr/bin/env bash
# Lays out a release in dist/ (or $1) as install/install.sh expects it:
# paddockd-linux-ARCH for amd64 and arm64, the CLI paddock-OS-ARCH for
# linux, darwin and windows (.exe) on amd64 and arm64, the SDKs' packages
# (sdk/pack.sh: it needs npm and python3), install.sh, the box image's
# files under image/, and SHA256SUMS over all of them. Every build
# carries the version ($PADDOCK_VERSION, or git describe). install.sh
# --offline DIR installs from it (the Vagrantfile does).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
mkdir -p "$out/image"
cd "$root"
version=${PADDOCK_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
ldflags="-s -w -X github.com/paddock-dev/paddock/appliance/version.Version=$version"
for arch in amd64 arm64; do
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$out/paddockd-linux-$arch" ./cmd/paddockd
  for os in linux darwin windows; do
    ext=; [ "$os" = windows ] && ext=.exe
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$out/paddock-$os-$arch$ext" ./cmd/paddock
  done
done
cp install/install.sh "$out/"
cp install/image/Dockerfile install/image/provision.sh install/image/paddock-init install/image/paddock-desktop "$out/image/"
# The SDKs of the release (the installer puts them where paddockd serves
# them, /sdk/).
rm -f "$out"/paddock-dev-sdk-*.tgz "$out"/paddock_sdk-*.whl
bash sdk/pack.sh "$out" >/dev/null
(cd "$out" && sha256sum paddock-* paddock_sdk-* paddockd-linux-* install.sh image/* >SHA256SUMS)
echo "$out"
