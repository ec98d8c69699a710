// Command paddock is the Paddock CLI. See package cli.
package main

import (
	"os"

	"github.com/paddock-dev/paddock/cmd/paddock/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:]))
}
