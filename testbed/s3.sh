#!/usr/bin/env bash
# Makes sure the tests' S3-compatible server is on this machine: the Versity
# S3 gateway (versitygw, Apache-2.0), a real server with an S3 API over a
# folder, built once from the Go module proxy at a pinned release into
# /usr/local/bin (about 3 minutes on 2 cores). Safe to run again. The tests
# start their own servers (testbed/harness/s3.go).
set -euo pipefail
version=v1.8.0
pinned=/usr/local/bin/versitygw-$version
if [ ! -x "$pinned" ]; then
  echo "testbed: building versitygw $version" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  GOBIN=$tmp go install "github.com/versity/versitygw/cmd/versitygw@$version"
  install -m 0755 "$tmp/versitygw" "$pinned"
fi
ln -sf "$pinned" /usr/local/bin/versitygw
