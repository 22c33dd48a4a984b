package readmetest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cliDocPath is the CLI reference whose generated section must match the binary's help.
const cliDocPath = "../../docs/cli.md"

const (
	beginHelp = "<!-- BEGIN GENERATED: redlock help -->\n"
	endHelp   = "<!-- END GENERATED: redlock help -->\n"
)

var updateCLI = flag.Bool("update-cli", false, "rewrite the generated section of docs/cli.md from redlock's help")

var usageCommand = regexp.MustCompile(`(?m)^\s+redlock ([a-z]+)\b`)

// helpSection runs the built redlock's help for itself and for every command
// its usage lists, as the markdown of the generated section.
func helpSection(t *testing.T, bin string) string {
	t.Helper()
	help := func(args ...string) string {
		out, err := exec.Command(bin, append([]string{"help"}, args...)...).Output()
		if err != nil {
			t.Fatalf("redlock help %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	main := help()
	var b strings.Builder
	fmt.Fprintf(&b, "### redlock help\n\n```\n%s```\n", main)
	seen := map[string]bool{"help": true}
	for _, m := range usageCommand.FindAllStringSubmatch(main, -1) {
		if cmd := m[1]; !seen[cmd] {
			seen[cmd] = true
			fmt.Fprintf(&b, "\n### redlock help %s\n\n```\n%s```\n", cmd, help(cmd))
		}
	}
	return b.String()
}

// TestCLIDocMatchesHelp keeps docs/cli.md's help section equal to the binary's.
func TestCLIDocMatchesHelp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "redlock")
	build := exec.Command("go", "build", "-o", bin, "./cmd/redlock")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building redlock: %v\n%s", err, out)
	}
	want := helpSection(t, bin)

	doc, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start, end := strings.Index(text, beginHelp), strings.Index(text, endHelp)
	if start < 0 || end < start {
		t.Fatalf("%s: the markers %q and %q are missing", cliDocPath, beginHelp, endHelp)
	}
	got := text[start+len(beginHelp) : end]
	if got == want {
		return
	}
	if *updateCLI {
		text = text[:start+len(beginHelp)] + want + text[end:]
		if err := os.WriteFile(cliDocPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the help section differs from redlock's help; run\n\tgo test ./internal/readmetest -run CLIDoc -update-cli\nwant:\n%s", cliDocPath, want)
}
