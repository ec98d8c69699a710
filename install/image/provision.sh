#!/bin/sh
# Provisions a box image. One script for the production image (Ubuntu
# 24.04, install/image/Dockerfile) and the testbed's (Debian, built from
# Debian's packages without a registry, testbed/image/Dockerfile), so that
# the tests exercise the same steps.
#
#   provision.sh production|testbed
#
# What a box has: a shell and the usual tools, git, Node.js and npm,
# Python, an XFCE desktop on display :1 served by TigerVNC (started by
# paddock-init when the box has a desktop), screenshot and automation tools
# (ImageMagick, xdotool), and a non-root user "paddock" whose home is
# /config, with passwordless sudo. Production also gets Docker (it runs
# inside the box under Sysbox).
set -eu

main() {
  flavor=${1:-}
  case "$flavor" in
    production|testbed) ;;
    *) echo "usage: provision.sh production|testbed" >&2; exit 2 ;;
  esac
  export DEBIAN_FRONTEND=noninteractive

  apt-get update
  apt-get install -y --no-install-recommends \
    bash ca-certificates coreutils curl dnsutils git iputils-ping less \
    netcat-openbsd procps sudo tar nodejs npm python3 \
    xfce4 xfce4-terminal tigervnc-standalone-server tigervnc-tools dbus-x11 \
    xdotool x11-apps x11-utils xterm imagemagick
  if [ "$flavor" = production ]; then
    apt-get install -y --no-install-recommends docker.io
  fi
  rm -rf /var/lib/apt/lists/*

  if ! id paddock >/dev/null 2>&1; then
    # Ubuntu images come with a user of uid 1000; the box user takes its place.
    if getent passwd 1000 >/dev/null; then
      userdel -r "$(getent passwd 1000 | cut -d: -f1)" 2>/dev/null || true
    fi
    useradd --uid 1000 --home-dir /config --create-home --shell /bin/bash paddock
  fi
  echo 'paddock ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/paddock
  chmod 0440 /etc/sudoers.d/paddock
  if [ "$flavor" = production ]; then
    usermod -aG docker paddock
  fi
  mkdir -p /mnt /var/lib/docker
  install -m 0755 "$(dirname "$0")/paddock-init" /usr/local/bin/paddock-init
  install -m 0755 "$(dirname "$0")/paddock-desktop" /usr/local/bin/paddock-desktop
}

main "$@"
