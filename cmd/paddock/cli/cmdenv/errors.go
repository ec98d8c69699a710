package cmdenv

import (
	"errors"
	"fmt"
)

// UsageError is a mistake in how a command was called: exit code 2.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// InvalidError is a value a command was given that is not one it takes
// (a bad name, duration, path): exit code 2 like a usage error, with the
// message alone (it says what is wrong; the usage line would not).
type InvalidError struct{ Msg string }

func (i InvalidError) Error() string { return i.Msg }

func Invalidf(format string, args ...any) error { return InvalidError{fmt.Sprintf(format, args...)} }

// ExitError carries an exit code chosen by a command (exec).
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// WantsHelp says whether a command's arguments ask for its help (before a
// "--", after which they belong to the command in the box).
func WantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}

// ErrHelpOnly stops a command run by showHelp before it does anything.
var ErrHelpOnly = errors.New("help only")

// ErrShown is an error whose details were already printed.
type ErrShown struct{ Err error }

func (e ErrShown) Error() string { return e.Err.Error() }
