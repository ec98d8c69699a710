#!/usr/bin/env bash
# Builds the test images without a registry and prints the box image's tag.
#
#   paddock-test/base:bookworm-<hash>  debootstrap of Debian's packages, docker import
#   paddock-test/box:<hash>            the box image (bash, git, node, npm, /config)
#
# Tags carry a hash of their inputs, so an image already on the machine is
# reused and a changed input builds a new one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

mirror() {
  local uri
  uri=$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 | awk '{print $2}' || true)
  if [ -z "$uri" ]; then
    uri=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n1 | awk '{print $2}' || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

# trixie: its Node.js (20) is new enough for every npm agent.
suite=trixie
m=$(mirror)
base_hash=$(printf '%s\n' "$suite" "$m" minbase v1 | sha256sum | cut -c1-12)
base="paddock-test/base:${suite}-${base_hash}"

if ! docker image inspect "$base" >/dev/null 2>&1; then
  echo "testbed: building $base from $m" >&2
  root=$(mktemp -d /var/tmp/paddock-rootfs.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase "$suite" "$root" "$m" >/var/log/paddock-debootstrap.log 2>&1 ||
    { echo "testbed: debootstrap failed; see /var/log/paddock-debootstrap.log" >&2; exit 1; }
  tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' - "$base" >/dev/null
  rm -rf "$root"
  trap - EXIT
fi

# The box image: the production provisioning script on the Debian base.
prov="$here/../install/image"
inputs="$here/image/Dockerfile $prov/provision.sh $prov/paddock-init $prov/paddock-desktop"
# shellcheck disable=SC2086
box_hash=$( (echo "$base"; cat $inputs /etc/ssl/certs/ca-certificates.crt) | sha256sum | cut -c1-12)
box="paddock-test/box:${box_hash}"
if ! docker image inspect "$box" >/dev/null 2>&1; then
  echo "testbed: building $box" >&2
  ctx=$(mktemp -d)
  # shellcheck disable=SC2086
  cp $inputs "$ctx/"
  # The machine's certificate authorities, so that npm reaches its
  # registry from inside the build as the machine itself does.
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/extra-ca.crt"
  docker build --build-arg BASE="$base" -t "$box" "$ctx" >/var/log/paddock-image-build.log 2>&1 ||
    { rm -rf "$ctx"; echo "testbed: image build failed; see /var/log/paddock-image-build.log" >&2; tail -20 /var/log/paddock-image-build.log >&2; exit 1; }
  rm -rf "$ctx"
fi
echo "$box"
