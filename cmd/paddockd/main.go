// Command paddockd is the Paddock server: it keeps the declared state,
// reconciles the container engine to it and serves the API. See package
// daemon.
package main

import (
	"os"

	"github.com/paddock-dev/paddock/appliance/daemon"
)

func main() {
	os.Exit(daemon.Run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}
