//go:build !linux

package main

import "os"

// isTerminalFile is false off Linux: unlock then needs --yes.
func isTerminalFile(*os.File) bool { return false }
