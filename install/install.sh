#!/bin/sh
# Paddock installer: turns a fresh Ubuntu 22.04/24.04 or Debian 12/13 server
# (amd64 or arm64) into a Paddock appliance and prints the one-time link
# that creates the owner account.
#
#   curl -fsSL https://HOST/install.sh | sudo sh
#   sudo PADDOCK_HOSTNAME=paddock.example.org sh install.sh
#   sudo sh install.sh --uninstall            # keeps /var/lib/paddock and drives
#   sudo sh install.sh --join IP:PORT --token T --ca-sha256 FP
#                     # a server for another's Paddock: the command
#                     # 'paddock node add' prints there
#   sudo sh install.sh --uninstall --purge    # removes them too
#
# Options (environment variables, or the flags in brackets):
#   PADDOCK_HOSTNAME  [--hostname H]  public host name; it must resolve to
#                     this server (default: the machine's FQDN). When none
#                     does, <ip>.sslip.io always does.
#   PADDOCK_VERSION   [--version V]   release to install (default: latest)
#   PADDOCK_RUNTIME   [--runtime R]   sysbox-runc (default) or runc; with
#                     runc, Docker inside boxes does not work
#   PADDOCK_TLS       [--tls T]       acme (default) or internal (Caddy's own
#                     CA, for private networks and tests)
#   PADDOCK_OFFLINE   [--offline DIR] take the binaries (paddock-linux-ARCH,
#                     paddockd-linux-ARCH and SHA256SUMS) from DIR instead of
#                     downloading them, and Docker from the distribution
#   PADDOCK_IMAGE     [--image I]     box image to use instead of building
#                     the production one
#   PADDOCK_SSH_PORT  [--ssh-port P]  the SSH gateway's port (default 2222)
#   PADDOCK_DOWNLOAD_URL              where releases are downloaded from
#   PADDOCK_NODE_NAME [--name N]      with --join: this server's node name
#                     (default: its host name)
#
# Every check runs before anything is changed: when one fails, the system
# is as it was. Running the installer again changes nothing that is
# current, and prints the setup state. Everything happens inside main, so
# a download cut short runs nothing.
set -eu

DOWNLOAD_URL_DEFAULT="https://get.paddock.dev"
BIN_DIR=/usr/local/bin
CLI_DIR=/usr/local/lib/paddock/cli
MIN_MEMORY_MB=1800
MIN_DISK_MB=10240
# Sysbox, pinned: the .deb of each architecture is checked against its
# SHA-256 here, so an online install needs nothing else to trust it.
SYSBOX_VERSION=0.6.5
SYSBOX_SHA256_amd64=f02ffb48eae99d6c884c9aa0378070cc716d028f58e87deec5ae00a41b706fe8
SYSBOX_SHA256_arm64=d9267eb176190b96dcfa29ba4c4c685a26a4a1aca1d7f15deb31ec33ed63de15

say() { printf '%s\n' "paddock: $*"; }
fail() {
  printf '%s\n' "paddock: error: $*" >&2
  exit 1
}

usage() {
  sed -n '2,29p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//' || true
}

# --- preflight: read only ----------------------------------------------------

check_root() {
  [ "$(id -u)" = 0 ] || fail "run the installer as root (sudo sh install.sh)"
}

# os_field prints a field of /etc/os-release, without quotes.
os_field() {
  sed -n "s/^$1=//p" /etc/os-release | head -n1 | tr -d "\"'"
}

check_os() {
  [ -r /etc/os-release ] || fail "cannot read /etc/os-release: Paddock runs on Ubuntu 22.04/24.04 and Debian 12/13"
  os_id=$(os_field ID)
  os_version=$(os_field VERSION_ID)
  case "$os_id:$os_version" in
    ubuntu:22.04 | ubuntu:24.04 | debian:12 | debian:13) ;;
    *) fail "this is $os_id $os_version; Paddock runs on Ubuntu 22.04/24.04 and Debian 12/13" ;;
  esac
}

check_arch() {
  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "this machine is $(uname -m); Paddock runs on amd64 and arm64" ;;
  esac
}

# port_holder prints the program listening on a TCP port, if any.
port_holder() {
  ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*users:(("\([^"]*\)".*/\1/p' | head -n1
}

check_ports() {
  command -v ss >/dev/null 2>&1 || fail "the ss command is missing (apt-get install iproute2)"
  if [ -n "$join" ]; then
    # A node serves no HTTPS nor SSH: its agent (7443) and the swarm's
    # ports (2377 joins, 7946 gossip) must be free, and reachable from the
    # other servers on the private network.
    for p in 7443 2377 7946; do
      if [ -n "$(ss -ltnH "sport = :$p" 2>/dev/null)" ]; then
        holder=$(port_holder "$p")
        [ "$holder" = paddockd ] || [ "$holder" = dockerd ] && continue
        fail "port $p is in use${holder:+ by $holder}: a node's agent listens on 7443 and Docker Swarm on 2377 and 7946; stop that service first"
      fi
    done
    return 0
  fi
  case "$ssh_port" in
    '' | *[!0-9]*) fail "PADDOCK_SSH_PORT=$ssh_port: give a port number" ;;
  esac
  for p in 80 443 "$ssh_port"; do
    if [ -n "$(ss -ltnH "sport = :$p" 2>/dev/null)" ]; then
      holder=$(port_holder "$p")
      [ "$holder" = paddockd ] && continue
      if [ "$p" = "$ssh_port" ]; then
        fail "port $p is in use${holder:+ by $holder}: Paddock's SSH gateway listens there; stop that service or choose another port with PADDOCK_SSH_PORT"
      fi
      fail "port $p is in use${holder:+ by $holder}: Paddock serves HTTPS on 80 and 443; stop that service first"
    fi
  done
}

# my_addresses prints this machine's IPv4 and IPv6 addresses, one a line.
my_addresses() {
  ip -o addr show 2>/dev/null | awk '{print $4}' | cut -d/ -f1
}

# primary_ip is the IPv4 address on the interface of the default route.
primary_ip() {
  dev=$(ip -4 route show default 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n1)
  [ -n "$dev" ] || return 0
  ip -o -4 addr show dev "$dev" 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1
}

check_hostname() {
  if [ -z "$hostname" ]; then
    hostname=$(hostname -f 2>/dev/null || hostname)
  fi
  case "$hostname" in
    *.*) ;;
    *) fail "the host name '$hostname' is not a public DNS name; set PADDOCK_HOSTNAME (or use $(sslip_name))" ;;
  esac
  # <a-b-c-d>.sslip.io and <a.b.c.d>.sslip.io resolve to a.b.c.d by design.
  case "$hostname" in
    *.sslip.io)
      name=${hostname%.sslip.io}
      case "${name##*.}" in
        *-*) ip=$(printf '%s' "${name##*.}" | tr '-' '.') ;;
        *) ip=$(printf '%s' "$name" | awk -F. '{print $(NF-3)"."$(NF-2)"."$(NF-1)"."$NF}') ;;
      esac
      if my_addresses | grep -qx "$ip"; then return 0; fi
      fail "$hostname names $ip, which is not an address of this server (use $(sslip_name))"
      ;;
  esac
  resolved=$(getent ahosts "$hostname" 2>/dev/null | awk '{print $1}' | sort -u || true)
  [ -n "$resolved" ] || fail "the host name $hostname does not resolve; point its DNS at this server, or use $(sslip_name)"
  mine=$(my_addresses)
  for a in $resolved; do
    if printf '%s\n' "$mine" | grep -qx "$a"; then return 0; fi
  done
  fail "$hostname resolves to $(printf "%s" "$resolved" | tr "\n" " " | sed "s/ $//"), which is not this server; point its DNS here, or use $(sslip_name)"
}

sslip_name() {
  ip=$(primary_ip)
  [ -n "$ip" ] || ip=$(my_addresses | grep -v '^127\.' | grep -v ':' | head -n1)
  printf '%s.sslip.io' "$(printf '%s' "$ip" | tr '.' '-')"
}

# check_sysbox checks what Sysbox needs of the kernel, before anything is
# installed: a kernel of 5.12 or later (ID-mapped mounts, so no shiftfs
# module is needed) and user namespaces.
check_sysbox() {
  [ "$runtime" = sysbox-runc ] || return 0
  kernel=$(uname -r)
  major=${kernel%%.*}
  rest=${kernel#*.}
  minor=${rest%%.*}
  case "$major$minor" in
    *[!0-9]*) fail "cannot read the kernel version from $kernel" ;;
  esac
  if [ "$major" -lt 5 ] || { [ "$major" -eq 5 ] && [ "$minor" -lt 12 ]; }; then
    fail "Sysbox needs Linux 5.12 or later (ID-mapped mounts); this kernel is $kernel: upgrade the kernel (e.g. apt-get install linux-image-generic-hwe-22.04 on Ubuntu 22.04), or install with PADDOCK_RUNTIME=runc (no Docker inside boxes)"
  fi
  userns=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)
  if [ "$userns" -eq 0 ]; then
    fail "Sysbox needs user namespaces, and they are off (user.max_user_namespaces = 0): turn them on with  sysctl -w user.max_user_namespaces=15000  (and in /etc/sysctl.d), or install with PADDOCK_RUNTIME=runc"
  fi
  if [ "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)" = 0 ]; then
    fail "Sysbox needs user namespaces, and kernel.unprivileged_userns_clone is 0: turn it on with  sysctl -w kernel.unprivileged_userns_clone=1  (and in /etc/sysctl.d), or install with PADDOCK_RUNTIME=runc"
  fi
  deb="sysbox-ce_${SYSBOX_VERSION}-0.linux_${arch}.deb"
  if [ -n "$offline" ] && ! command -v sysbox-runc >/dev/null 2>&1 && [ ! -f "$offline/$deb" ]; then
    fail "offline mode with sysbox: $offline/$deb is missing (or use PADDOCK_RUNTIME=runc)"
  fi
}

check_resources() {
  mem=$(awk '/^MemTotal:/ {print int($2/1024)}' /proc/meminfo)
  [ "$mem" -ge "$MIN_MEMORY_MB" ] || fail "this server has ${mem} MB of memory; Paddock needs at least 2 GB"
  mkdir_probe=/var/lib
  disk=$(df -Pm "$mkdir_probe" | awk 'NR==2 {print $4}')
  [ "$disk" -ge "$MIN_DISK_MB" ] || fail "$mkdir_probe has ${disk} MB free; Paddock needs at least 10 GB for images and boxes"
}

check_options() {
  if [ -n "$join" ]; then
    case "$join" in
      *:*) ;;
      *) fail "--join $join: give the control plane's IP:PORT, as 'paddock node add' prints it" ;;
    esac
    [ -n "$token" ] || fail "--join needs --token (from 'paddock node add')"
    case "$ca_sha256" in
      '' ) fail "--join needs --ca-sha256 (from 'paddock node add')" ;;
      *[!0-9a-f]*) fail "--ca-sha256 $ca_sha256: give the 64 hex digits 'paddock node add' printed" ;;
    esac
    [ "${#ca_sha256}" = 64 ] || fail "--ca-sha256 $ca_sha256: give the 64 hex digits 'paddock node add' printed"
  fi
  case "$runtime" in
    sysbox-runc | runc) ;;
    *) fail "PADDOCK_RUNTIME=$runtime: use sysbox-runc or runc" ;;
  esac
  case "$tls" in
    acme | internal) ;;
    *) fail "PADDOCK_TLS=$tls: use acme or internal" ;;
  esac
  if [ -n "$offline" ]; then
    for f in "paddock-linux-$arch" "paddockd-linux-$arch" SHA256SUMS; do
      [ -f "$offline/$f" ] || fail "offline mode: $offline/$f is missing"
    done
  else
    command -v curl >/dev/null 2>&1 || fail "curl is missing (apt-get install curl)"
  fi
}

# --- steps that change the system --------------------------------------------

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
}

install_docker() {
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    say "docker: already running"
    return 0
  fi
  say "docker: installing"
  apt-get update -q >/dev/null
  if [ -n "$offline" ]; then
    apt_install docker.io nftables iproute2
  else
    # Docker's own packages, from its signed apt repository.
    apt_install ca-certificates curl gnupg nftables iproute2
    install -m 0755 -d /etc/apt/keyrings
    curl -fsSL "https://download.docker.com/linux/$os_id/gpg" -o /etc/apt/keyrings/docker.asc
    chmod a+r /etc/apt/keyrings/docker.asc
    codename=$(os_field VERSION_CODENAME)
    printf 'deb [arch=%s signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/%s %s stable\n' \
      "$arch" "$os_id" "$codename" >/etc/apt/sources.list.d/docker.list
    apt-get update -q >/dev/null
    apt_install docker-ce docker-ce-cli containerd.io
  fi
  systemctl enable --now docker >/dev/null 2>&1 || true
  i=0
  until docker info >/dev/null 2>&1; do
    i=$((i + 1))
    [ "$i" -lt 60 ] || fail "docker did not start; see journalctl -u docker"
    sleep 1
  done
}

# fetch NAME: the release file NAME, into $work, checked against SHA256SUMS.
fetch() {
  if [ -n "$offline" ]; then
    cp "$offline/$1" "$work/$1"
  else
    curl -fsSL "$download_url/$version/$1" -o "$work/$1" || fail "downloading $1 of Paddock $version failed"
  fi
  want=$(awk -v f="$1" '$2 == f || $2 == "*"f {print $1}' "$work/SHA256SUMS")
  [ -n "$want" ] || fail "SHA256SUMS has no checksum for $1"
  got=$(sha256sum "$work/$1" | awk '{print $1}')
  [ "$got" = "$want" ] || fail "$1: checksum mismatch (got $got, want $want); nothing was installed"
}

install_sysbox() {
  if [ "$runtime" = runc ]; then
    say "WARNING: runtime runc: boxes work, but Docker inside boxes will not"
    return 0
  fi
  if command -v sysbox-runc >/dev/null 2>&1; then
    say "sysbox: already installed"
    return 0
  fi
  say "sysbox: installing $SYSBOX_VERSION"
  deb="sysbox-ce_${SYSBOX_VERSION}-0.linux_${arch}.deb"
  if [ -n "$offline" ]; then
    cp "$offline/$deb" "$work/$deb"
  else
    curl -fsSL "https://downloads.nestybox.com/sysbox/releases/v${SYSBOX_VERSION}/$deb" -o "$work/$deb" ||
      fail "downloading Sysbox failed"
  fi
  case "$arch" in
    amd64) want=$SYSBOX_SHA256_amd64 ;;
    arm64) want=$SYSBOX_SHA256_arm64 ;;
  esac
  got=$(sha256sum "$work/$deb" | awk '{print $1}')
  [ "$got" = "$want" ] || fail "$deb: checksum mismatch (got $got, want $want); Sysbox was not installed"
  apt_install "$work/$deb"
}

# Bucket mounts (a box's mount "s3://..."): rclone mounts them, through
# FUSE. Without them Paddock runs on, and a box that mounts a bucket says
# what is missing.
install_mounts() {
  if command -v rclone >/dev/null 2>&1 && command -v fusermount3 >/dev/null 2>&1; then
    return 0
  fi
  if [ -n "$offline" ]; then
    say "WARNING: rclone or fuse3 missing: boxes cannot mount buckets until they are installed (apt-get install rclone fuse3)"
    return 0
  fi
  say "bucket mounts: installing rclone and fuse3"
  apt_install rclone fuse3 || say "WARNING: rclone and fuse3 did not install: boxes cannot mount buckets until they are"
}

install_binaries() {
  changed=0
  for b in paddock paddockd; do
    fetch "$b-linux-$arch"
    if [ -f "$BIN_DIR/$b" ] && cmp -s "$work/$b-linux-$arch" "$BIN_DIR/$b"; then
      say "$b: current"
      continue
    fi
    install -m 0755 "$work/$b-linux-$arch" "$BIN_DIR/.$b.new"
    mv -f "$BIN_DIR/.$b.new" "$BIN_DIR/$b"
    say "$b: installed"
    changed=1
  done
  if [ "$changed" = 1 ] && systemctl is-active --quiet paddockd 2>/dev/null; then
    say "paddockd: restarting for the new binary"
    systemctl restart paddockd
  fi
  if [ "$changed" = 1 ] && systemctl is-active --quiet paddock-node 2>/dev/null; then
    say "paddock-node: restarting for the new binary"
    systemctl restart paddock-node
  fi
}

# install_clients puts the CLI for users' computers (every paddock-OS-ARCH
# the release lists) where paddockd serves it, at https://HOST/cli/, and
# the SDK packages of the release beside it (served at /sdk/).
install_clients() {
  mkdir -p "$CLI_DIR"
  : >"$work/cli-sums"
  awk '$2 ~ /^\*?(paddock-(linux|darwin|windows)-(amd64|arm64)(\.exe)?|paddock-dev-sdk-[0-9.]+\.tgz|paddock_sdk-[0-9.]+-py3-none-any\.whl)$/ {sub(/^\*/, "", $2); print $2}' "$work/SHA256SUMS" >"$work/cli-list"
  while IFS= read -r f; do
    if [ -n "$offline" ] && [ ! -f "$offline/$f" ]; then
      continue # an offline release may carry only this machine's CLI
    fi
    fetch "$f"
    install -m 0644 "$work/$f" "$CLI_DIR/$f"
    grep -E " \*?$f\$" "$work/SHA256SUMS" >>"$work/cli-sums"
  done <"$work/cli-list"
  install -m 0644 "$work/cli-sums" "$CLI_DIR/SHA256SUMS"
  say "clients: $(grep -c 'paddock-\(linux\|darwin\|windows\)-' "$CLI_DIR/SHA256SUMS" || true) served at /cli/, $(grep -c '\.tgz$\|\.whl$' "$CLI_DIR/SHA256SUMS" || true) SDK packages at /sdk/"
}

build_image() {
  if [ -n "$image" ]; then
    return 0
  fi
  image=paddock/box:latest
  if docker image inspect "$image" >/dev/null 2>&1; then
    say "box image: $image present"
    return 0
  fi
  say "box image: building $image (several minutes, once)"
  mkdir -p "$work/image"
  for f in Dockerfile provision.sh paddock-init paddock-desktop; do
    fetch "image/$f"
  done
  docker build -t "$image" "$work/image" >/var/log/paddock-image-build.log 2>&1 ||
    fail "building the box image failed; see /var/log/paddock-image-build.log"
}

hand_over() {
  if [ -n "$join" ]; then
    set -- install --runtime "$runtime" --join "$join" --token "$token" --ca-sha256 "$ca_sha256"
    if [ -n "$node_name" ]; then set -- "$@" --name "$node_name"; fi
    if [ -n "$image" ]; then set -- "$@" --image "$image"; fi
    "$BIN_DIR/paddockd" "$@"
    return
  fi
  set -- install --runtime "$runtime" --hostname "$hostname" --tls "$tls" --ssh-listen ":$ssh_port"
  if [ -n "$image" ]; then set -- "$@" --image "$image"; fi
  "$BIN_DIR/paddockd" "$@"
}

uninstall() {
  check_root
  # The service stops first: while it runs it puts back what it declares,
  # so boxes stopped under it would be started again. Then the boxes stop
  # (their filesystems stay for a reinstall), so nothing runs unmanaged,
  # and the cleanup below can remove the firewall table.
  say "stopping and removing the service"
  systemctl disable --now paddockd >/dev/null 2>&1 || true
  systemctl disable --now paddock-node >/dev/null 2>&1 || true
  if command -v docker >/dev/null 2>&1; then
    boxes=$(docker ps -q --filter label=paddock.kind=box 2>/dev/null || true)
    if [ -n "$boxes" ]; then
      say "stopping boxes"
      printf '%s\n' "$boxes" | xargs -r docker stop -t 5 >/dev/null 2>&1 || true
    fi
  fi
  rm -f /etc/systemd/system/paddockd.service /etc/systemd/system/paddock-node.service
  systemctl daemon-reload >/dev/null 2>&1 || true
  if [ -x "$BIN_DIR/paddockd" ]; then
    "$BIN_DIR/paddockd" --cleanup >/dev/null 2>&1 || true
  fi
  rm -f "$BIN_DIR/paddock" "$BIN_DIR/paddockd"
  rm -rf "$CLI_DIR"
  rm -rf /etc/paddock
  if [ "$purge" = 1 ]; then
    say "removing /var/lib/paddock, boxes, snapshots and drives"
    if command -v docker >/dev/null 2>&1; then
      docker ps -aq --filter label=paddock.instance | xargs -r docker rm -f >/dev/null 2>&1 || true
      docker volume ls -q --filter label=paddock.instance | xargs -r docker volume rm >/dev/null 2>&1 || true
      docker images -q --filter label=paddock.instance | xargs -r docker rmi -f >/dev/null 2>&1 || true
    fi
    rm -rf /var/lib/paddock
  else
    say "kept /var/lib/paddock and the drives (run --uninstall --purge to remove them)"
  fi
  say "uninstalled"
}

main() {
  hostname=${PADDOCK_HOSTNAME:-}
  version=${PADDOCK_VERSION:-latest}
  runtime=${PADDOCK_RUNTIME:-sysbox-runc}
  tls=${PADDOCK_TLS:-acme}
  offline=${PADDOCK_OFFLINE:-}
  image=${PADDOCK_IMAGE:-}
  ssh_port=${PADDOCK_SSH_PORT:-2222}
  download_url=${PADDOCK_DOWNLOAD_URL:-$DOWNLOAD_URL_DEFAULT}
  mode=install
  purge=0
  join=
  token=
  ca_sha256=
  node_name=${PADDOCK_NODE_NAME:-}
  while [ $# -gt 0 ]; do
    case "$1" in
      --uninstall)
        [ "$mode" = uninstall ] && purge=1
        mode=uninstall
        ;;
      --purge) purge=1 ;;
      --hostname) hostname=${2:?--hostname needs a value}; shift ;;
      --version) version=${2:?--version needs a value}; shift ;;
      --runtime) runtime=${2:?--runtime needs a value}; shift ;;
      --tls) tls=${2:?--tls needs a value}; shift ;;
      --offline) offline=${2:?--offline needs a directory}; shift ;;
      --image) image=${2:?--image needs a value}; shift ;;
      --ssh-port) ssh_port=${2:?--ssh-port needs a value}; shift ;;
      --join) join=${2:?--join needs IP:PORT}; shift ;;
      --token) token=${2:?--token needs a value}; shift ;;
      --ca-sha256) ca_sha256=${2:?--ca-sha256 needs a value}; shift ;;
      --name) node_name=${2:?--name needs a value}; shift ;;
      -h | --help) usage; exit 0 ;;
      *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
  done
  if [ "$mode" = uninstall ]; then
    uninstall
    return 0
  fi

  check_root
  check_os
  check_arch
  check_options
  check_ports
  if [ -z "$join" ]; then check_hostname; fi
  check_resources
  check_sysbox
  if [ -n "$join" ]; then
    say "installing Paddock $version as a node of $join on $os_id $os_version ($arch), runtime $runtime"
  else
    say "installing Paddock $version for $hostname on $os_id $os_version ($arch), runtime $runtime"
  fi

  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  if [ -n "$offline" ]; then
    cp "$offline/SHA256SUMS" "$work/SHA256SUMS"
  else
    curl -fsSL "$download_url/$version/SHA256SUMS" -o "$work/SHA256SUMS" || fail "downloading SHA256SUMS of Paddock $version failed"
  fi
  install_docker
  install_sysbox
  install_mounts
  install_binaries
  if [ -z "$join" ]; then install_clients; fi
  build_image
  hand_over
}

main "$@"
