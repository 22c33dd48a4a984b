package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

func main() {
	code, msg := codeOf(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	if msg != "" {
		// One line: joined per-node errors come with newlines.
		fmt.Fprintln(os.Stderr, strings.ReplaceAll(msg, "\n", "; "))
	}
	os.Exit(code)
}

// run dispatches to a subcommand. It returns nil or an *exitError.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageMain)
		return exitf(exitUsage, "")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "exec":
		return runExec(ctx, rest, stdout, stderr)
	case "ls":
		return runLs(ctx, rest, stdout, stderr)
	case "doctor":
		return runDoctor(ctx, rest, stdout)
	case "inspect":
		return runInspect(ctx, rest, stdout)
	case "unlock":
		return runUnlock(ctx, rest, stdout)
	case "demo":
		return runDemo(ctx, rest, stdout)
	case "elect":
		return runElect(ctx, rest, stdout, stderr)
	case "leader":
		return runLeader(ctx, rest, stdout)
	case "tick":
		return runTick(ctx, rest, stdout)
	case "help", "-h", "-help", "--help":
		return help(rest, stdout)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case unitCmd: // internal: the supervisor of exec's CMD
		return &exitError{code: runUnit(rest)}
	default:
		return exitf(exitUsage, "redlock: unknown command %q (want exec, elect, leader, ls, doctor, inspect, unlock, tick, demo or help)", cmd)
	}
}

func help(args []string, stdout io.Writer) error {
	text := usageMain
	if len(args) > 0 {
		switch args[0] {
		case "exec":
			text = usageExec
		case "ls":
			text = usageLs
		case "doctor":
			text = usageDoctor
		case "inspect":
			text = usageInspect
		case "unlock":
			text = usageUnlock
		case "demo":
			text = usageDemo
		case "elect":
			text = usageElect
		case "leader":
			text = usageLeader
		case "tick":
			text = usageTick
		default:
			return exitf(exitUsage, "redlock help: unknown command %q", args[0])
		}
	}
	fmt.Fprint(stdout, text)
	return nil
}

// newFlagSet returns a flag set that prints nothing itself: parse reports
// errors in one line.
func newFlagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("redlock "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args with fs; -h prints the command's usage on stdout and
// returns errHelp.
func parse(fs *flag.FlagSet, cmd, usage string, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return errHelp
	}
	if err != nil && strings.Contains(err.Error(), errNodesTwice.Error()) {
		return usageErr(cmd, "%v", errNodesTwice) // without the value
	}
	if err != nil {
		return usageErr(cmd, "%s", strings.TrimSpace(err.Error()))
	}
	return nil
}

// errHelp ends a command successfully after printing its usage.
var errHelp = &exitError{code: exitOK}

// versionLine is "redlock VERSION [REVISION[+modified]] GOVERSION", from
// what the Go toolchain recorded in the binary: the module version with
// go install, "(devel)" for a build in the repository.
func versionLine() string {
	version, rev, modified := "(unknown)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value[:min(12, len(s.Value))]
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	parts := []string{"redlock", version}
	if rev != "" {
		if modified {
			rev += "+modified"
		}
		parts = append(parts, rev)
	}
	return strings.Join(append(parts, runtime.Version()), " ")
}
