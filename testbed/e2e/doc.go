// Package e2e runs the real paddock CLI against a real paddockd on the real
// Docker engine. Scripts in testdata/*.txtar (rogpeppe/go-internal
// testscript) each get their own daemon; Go tests cover what a script cannot
// express well (a crash in the middle of work).
//
// Outside CI these tests skip, with the reason printed, when the machine
// cannot run the engine; in CI (CI=true) that is a failure.
package e2e
