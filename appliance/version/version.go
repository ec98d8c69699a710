// Package version is the release both binaries were built as: set by the
// release and testbed/up.sh with
//
//	-ldflags "-X github.com/paddock-dev/paddock/appliance/version.Version=V"
//
// and "dev" in a plain go build. The client compares it with the server's.
package version

// Version of this build.
var Version = "dev"

// Release is the release these sources make. The SDKs in sdk/ carry the
// same version (pyproject's from paddock/__init__.py, and package.json's),
// so an SDK's version says which server it was made with; a test keeps
// them equal.
const Release = "0.1.0"
