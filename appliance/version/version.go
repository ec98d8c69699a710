// Package version is the release both binaries were built as: set by the
// release and testbed/up.sh with
//
//	-ldflags "-X github.com/paddock-dev/paddock/appliance/version.Version=V"
//
// and "dev" in a plain go build. The client compares it with the server's.
package version

// Version of this build.
var Version = "dev"
