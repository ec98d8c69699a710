#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine: installs Debian's
# docker.io (and the other packages the testbed uses) when missing, and starts
# dockerd in the background when none is running. Safe to run again.
set -euo pipefail

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v nft >/dev/null || need+=(nftables)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v ip >/dev/null || need+=(iproute2)
command -v ssh >/dev/null || need+=(openssh-client)
command -v curl >/dev/null || need+=(curl)
command -v chromium >/dev/null || need+=(chromium)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v shellcheck >/dev/null || need+=(shellcheck)
command -v file >/dev/null || need+=(file)
command -v rsync >/dev/null || need+=(rsync)
command -v rclone >/dev/null || need+=(rclone)
command -v fusermount3 >/dev/null || need+=(fuse3)
if [ ${#need[@]} -gt 0 ]; then
  echo "testbed: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "testbed: starting dockerd" >&2
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "testbed: dockerd did not start; see /var/log/dockerd.log" >&2; exit 1; }
fi
