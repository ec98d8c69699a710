package docker

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// A command the runtime cannot start (not found, not executable) never
// runs: the engine writes its own message on the command's output and
// the exec ends with 126. A shell says "command not found" with 127, and
// "permission denied" with 126, on its error output; startGuard makes the
// exec say the same.

// ociStartFailed begins the engine's message.
const ociStartFailed = "OCI runtime exec failed: exec failed: unable to start container process: "

// startGuard passes a command's output through, except what begins with
// the engine's message, which it holds until the exec's end.
type startGuard struct {
	w       io.Writer
	held    bytes.Buffer
	decided bool // the output is the command's own: passed through
}

// holdMax bounds what is held: the engine's message is one short line.
const holdMax = 4 << 10

func (g *startGuard) Write(p []byte) (int, error) {
	if g.decided {
		return g.w.Write(p)
	}
	g.held.Write(p)
	b := g.held.Bytes()
	n := min(len(b), len(ociStartFailed))
	if string(b[:n]) == ociStartFailed[:n] && len(b) <= holdMax {
		return len(p), nil // the engine's message, or its beginning
	}
	g.decided = true
	_, err := g.w.Write(b)
	g.held.Reset()
	return len(p), err
}

// end gives the exec's exit code as a shell would give it, saying why on
// stderr, when the command argv could not start; else it passes what it
// held.
func (g *startGuard) end(code int, stderr io.Writer, argv []string) int {
	msg := g.held.String()
	g.held.Reset()
	if g.decided || msg == "" {
		return code
	}
	if code != 126 || !strings.HasPrefix(msg, ociStartFailed) || len(argv) == 0 {
		g.w.Write([]byte(msg))
		return code
	}
	cmd := argv[0]
	switch {
	case strings.Contains(msg, "executable file not found"), strings.Contains(msg, "no such file or directory"):
		// A shell line handed over as one word ("cd /x && make"): no
		// program has that name, and the way to run it is a shell.
		if strings.ContainsAny(cmd, " \t&|;<>$`") {
			fmt.Fprintf(stderr, "command not found: %s (a shell line as one word: run it with a shell, as bash -lc %s)\n", cmd, shellWord(cmd))
			return 127
		}
		fmt.Fprintf(stderr, "command not found: %s\n", cmd)
		return 127
	case strings.Contains(msg, "permission denied"):
		fmt.Fprintf(stderr, "%s: permission denied\n", cmd)
		return 126
	}
	fmt.Fprintf(stderr, "%s: cannot run: %s", cmd, strings.TrimPrefix(msg, ociStartFailed))
	return 126
}

// shellWord quotes s as one word of a POSIX shell.
func shellWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
