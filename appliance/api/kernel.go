package api

import (
	"time"
)

// RunPost runs code in a box's code interpreter: a Jupyter kernel that
// keeps its state between calls (a context).
type RunPost struct {
	Code string `json:"code"`
	// Lang picks the kernel: python (the default), or the language of
	// another Jupyter kernel installed in the box's image (node and bash
	// need one: ijavascript, bash_kernel).
	Lang string `json:"lang,omitempty"`
	// Context names the context to run in (default: the language's own,
	// started on first use).
	Context string `json:"context,omitempty"`
	// Timeout interrupts the code after this long (seconds, or a
	// duration such as "90s"; default 60 s, at most 1 h): the kernel
	// gets an interrupt (Ctrl-C), keeps its state and answers on.
	Timeout string `json:"timeout,omitempty"`
}

// RunError is an error the code raised.
type RunError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// RunEvent is what a run says as it runs, to a caller that follows it:
// that the code was handed to the kernel (Started, first), a piece of
// its output, or a display.
type RunEvent struct {
	Started bool           `json:"started,omitempty"`
	Stdout  string         `json:"stdout,omitempty"`
	Stderr  string         `json:"stderr,omitempty"`
	Display map[string]any `json:"display,omitempty"`
}

// RunResult is what a run of code gave.
type RunResult struct {
	Context string `json:"context"`
	Lang    string `json:"lang"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	// Result is the value of the code's last expression, in each form the
	// kernel gave: "text/plain" always, "text/html" (a data frame),
	// "image/png" (base64), "application/json" ...
	Result map[string]any `json:"result,omitempty"`
	// Display holds what the code displayed as it ran (a matplotlib
	// figure: "image/png", base64), in order, each in its forms.
	Display []map[string]any `json:"display,omitempty"`
	// Error is the exception the code raised, with its traceback.
	Error *RunError `json:"error,omitempty"`
	// ExecutionCount counts the runs of the context.
	ExecutionCount int `json:"execution_count"`
	// TimedOut says the code ran past its timeout and was interrupted.
	TimedOut bool `json:"timed_out,omitempty"`
	// Started says the context's kernel was started for this run: what
	// earlier runs set is not there.
	Started bool `json:"started,omitempty"`
}

// CodeContext is a kernel of a box's code interpreter, with its state.
type CodeContext struct {
	Name string `json:"name"`
	Lang string `json:"lang"`
	// Kernel is the Jupyter kernel's name (python3).
	Kernel  string    `json:"kernel"`
	Started time.Time `json:"started"`
	// State is running, or dead (the box was stopped, or the kernel
	// died): restart it.
	State string `json:"state"`
}

// ContextPost makes a context.
type ContextPost struct {
	// Name is 1-32 lowercase letters, digits and '-' (default: made up).
	Name string `json:"name,omitempty"`
	Lang string `json:"lang,omitempty"`
}
