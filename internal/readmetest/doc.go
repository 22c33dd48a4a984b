// Package readmetest builds the Go snippets of the repository's README and
// of docs/migrating.md, so that a snippet which drifts from the API fails
// the test run (make test and make lint).
//
// The convention for README code blocks fenced as go:
//
//   - A block whose first code line is "package main" starts a new program.
//   - A block that does not start with a package clause continues the program
//     of the block before it: its text is appended to that program, so it may
//     hold functions that use the imports and helpers declared there. It may
//     start with an import declaration of its own, for the packages only it
//     uses: the imports move to the top of the program.
//
// Every block is built with the blocks before it in its program and without
// those after it, so a program's first block builds on its own (an import
// that only a continuation uses belongs in the continuation). Each is built
// (not run) in a throwaway module that replaces this
// repository's modules with the local tree, so programs may import the root
// module and the optional modules (promlock, otellock, rueidisnode).
//
// It also keeps the generated section of docs/cli.md equal to the output of
// "redlock help" and "redlock help COMMAND" for every command the usage
// lists; -update-cli rewrites that section.
package readmetest
