#!/usr/bin/env bash
# Lays out a release in dist/ (or $1) as install/install.sh expects it:
# paddock-linux-ARCH, paddockd-linux-ARCH for amd64 and arm64, install.sh,
# the box image's files under image/, and SHA256SUMS over all of them.
# install.sh --offline DIR installs from it (the Vagrantfile does).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
mkdir -p "$out/image"
cd "$root"
for arch in amd64 arm64; do
  for b in paddock paddockd; do
    CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags='-s -w' -o "$out/$b-linux-$arch" "./cmd/$b"
  done
done
cp install/install.sh "$out/"
cp install/image/Dockerfile install/image/provision.sh install/image/paddock-init install/image/paddock-desktop "$out/image/"
(cd "$out" && sha256sum paddock-linux-* paddockd-linux-* install.sh image/* >SHA256SUMS)
echo "$out"
