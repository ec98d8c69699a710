#!/bin/sh
# Installs the paddock CLI of this server's version on Linux or macOS:
#
#   curl -fsSL @URL@/cli/install.sh | sh
#
# It downloads paddock-OS-ARCH and SHA256SUMS from the server, checks the
# binary's checksum, and installs it into ~/.local/bin (as root:
# /usr/local/bin), or into $PADDOCK_INSTALL_DIR. Nothing is installed when
# a step fails. Everything runs inside main, so a cut-off download does
# nothing.
set -eu

main() {
  url='@URL@'
  fail() {
    echo "paddock install: $*" >&2
    exit 1
  }
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) fail "$(uname -s) is not supported here: on Windows run  irm $url/cli/install.ps1 | iex" ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "$(uname -m) is not supported (amd64 and arm64 are)" ;;
  esac
  if [ -n "${PADDOCK_INSTALL_DIR:-}" ]; then
    dir=$PADDOCK_INSTALL_DIR
  elif [ "$(id -u)" = 0 ]; then
    dir=/usr/local/bin
  else
    dir=$HOME/.local/bin
  fi
  command -v curl >/dev/null 2>&1 || fail "curl is missing"
  name=paddock-$os-$arch
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  curl -fsSL "$url/cli/SHA256SUMS" -o "$work/SHA256SUMS" || fail "downloading $url/cli/SHA256SUMS failed"
  curl -fsSL "$url/cli/$name" -o "$work/paddock" || fail "this server has no $name ($url/cli/ lists what it has)"
  want=$(awk -v f="$name" '$2 == f || $2 == "*"f {print $1}' "$work/SHA256SUMS")
  [ -n "$want" ] || fail "SHA256SUMS has no checksum for $name"
  if command -v sha256sum >/dev/null 2>&1; then
    got=$(sha256sum "$work/paddock" | awk '{print $1}')
  else
    got=$(shasum -a 256 "$work/paddock" | awk '{print $1}')
  fi
  [ "$got" = "$want" ] || fail "$name: checksum mismatch (got $got, want $want); nothing was installed"
  mkdir -p "$dir"
  chmod 0755 "$work/paddock"
  mv -f "$work/paddock" "$dir/paddock" || fail "cannot write $dir/paddock"
  echo "installed $dir/paddock ($("$dir/paddock" --version))"
  case ":$PATH:" in
    *":$dir:"*) ;;
    *) echo "add $dir to your PATH, e.g.:  export PATH=\"$dir:\$PATH\"" ;;
  esac
  echo "next:  paddock login $url"
}

main "$@"
