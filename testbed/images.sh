#!/usr/bin/env bash
# Builds the test images without a registry and prints the tag of the one
# asked for (default: box).
#
#   images.sh [box|server|mini|desk]
#
#   paddock-test/base:trixie-<hash>  debootstrap of Debian's packages, docker import
#   paddock-test/box:<hash>          the box image (provision.sh: desktop, agents, /config)
#   paddock-test/server:<hash>       a bare Debian server with systemd as PID 1, for
#                                    running install/install.sh end to end
#   paddock-test/mini:<hash>         a small box image (user, paddock-init, busybox, and
#                                    python3-minimal, which the warm exec runs, as in the
#                                    box image), moved into the nodes' and the server's
#                                    nested engines by the tests
#   paddock-test/desk:<hash>         the mini image with a desktop that paddock-init
#                                    starts (TigerVNC's X server, no XFCE), ImageMagick's
#                                    import (screenshots) and nc (the desktop's bridge):
#                                    a desktop box on another server in TestCluster
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

want=${1:-box}
case "$want" in box|server|mini|desk) ;; *) echo "usage: images.sh [box|server|mini|desk]" >&2; exit 2 ;; esac

# trixie, like production's Ubuntu, gets Node.js 22 from provision.sh.
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

# build TAG DOCKERFILE-TEXT [FILES...]: a small image on the base.
build() {
  local tag=$1 text=$2 ctx
  shift 2
  if docker image inspect "$tag" >/dev/null 2>&1; then
    return 0
  fi
  echo "testbed: building $tag" >&2
  ctx=$(mktemp -d)
  printf '%s\n' "$text" >"$ctx/Dockerfile"
  [ $# -eq 0 ] || cp "$@" "$ctx/"
  docker build -t "$tag" "$ctx" >/var/log/paddock-image-build.log 2>&1 ||
    { rm -rf "$ctx"; echo "testbed: building $tag failed; see /var/log/paddock-image-build.log" >&2; tail -20 /var/log/paddock-image-build.log >&2; exit 1; }
  rm -rf "$ctx"
}

if [ "$want" = server ]; then
  text="FROM $base
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      systemd systemd-sysv dbus iproute2 ca-certificates netcat-openbsd procps && rm -rf /var/lib/apt/lists/*
CMD [\"/sbin/init\"]"
  tag="paddock-test/server:$(printf '%s' "$text" | sha256sum | cut -c1-12)"
  build "$tag" "$text"
  echo "$tag"
  exit 0
fi
if [ "$want" = desk ]; then
  # GL's software renderer (LLVM and Mesa, 200 MB), which the X server
  # starts without, is taken out.
  mini=$(bash "$here/images.sh" mini)
  prov="$here/../install/image"
  text="FROM $mini
RUN apt-get update && apt-get install -y --no-install-recommends tigervnc-standalone-server x11-utils imagemagick netcat-openbsd && \\
    apt-get clean && rm -rf /var/lib/apt/lists/* && \\
    dpkg --force-depends --purge \$(dpkg-query -W -f '\${Package}\\n' 'libllvm*' 'mesa-libgallium' 'libz3-*' 'libgl1-mesa-dri' 2>/dev/null)
COPY paddock-desktop /usr/local/bin/paddock-desktop"
  tag="paddock-test/desk:$( (printf '%s' "$text"; cat "$prov/paddock-desktop") | sha256sum | cut -c1-12)"
  build "$tag" "$text" "$prov/paddock-desktop"
  echo "$tag"
  exit 0
fi
if [ "$want" = mini ]; then
  prov="$here/../install/image"
  text="FROM $base
RUN apt-get update && apt-get install -y --no-install-recommends busybox python3-minimal && apt-get clean && rm -rf /var/lib/apt/lists/* && \\
    useradd --uid 1000 --home-dir /config --create-home --shell /bin/sh paddock
COPY paddock-init /usr/local/bin/paddock-init
CMD [\"/usr/local/bin/paddock-init\"]"
  tag="paddock-test/mini:$( (printf '%s' "$text"; cat "$prov/paddock-init") | sha256sum | cut -c1-12)"
  build "$tag" "$text" "$prov/paddock-init"
  echo "$tag"
  exit 0
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
