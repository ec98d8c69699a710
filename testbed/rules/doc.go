// Package rules holds the tests that keep the repository's shape: the CLI's
// import graph, doc comments on every package, thin mains and the fixed top
// level.
package rules
