package lockmetrics

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

func TestClassesBounded(t *testing.T) {
	c, err := NewClasses(nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range 100_000 {
		seen[c.Of(fmt.Sprint(i))] = true
	}
	if len(seen) != 11 || !seen[OtherClass] {
		t.Errorf("%d classes from 100,000 keys without ':', want 10 and %q", len(seen), OtherClass)
	}
	if got := c.Of("job:1"); got != OtherClass {
		t.Errorf("an 11th class: %q, want %q", got, OtherClass)
	}
	if got := c.Of("7"); got != "7" {
		t.Errorf("a known class: %q", got)
	}
	if _, err := NewClasses(nil, -1); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("negative max: %v", err)
	}
	if DefaultClass("status:billing:x") != "status" || DefaultClass("plain") != "plain" {
		t.Error("DefaultClass")
	}
}

func TestTextEscapesLabels(t *testing.T) {
	text := NewText()
	text.Add(NodeErrors, 1, "a\"b\\c\nd", "acquire")
	var b strings.Builder
	if _, err := text.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if want := `quorumlock_node_errors_total{node="a\"b\\c\nd",op="acquire"} 1`; !strings.Contains(b.String(), want) {
		t.Errorf("exposition lacks %s:\n%s", want, b.String())
	}
}

// A node reported recovering after a round is counted as such, and not as
// a second request of that round nor as a failure.
func TestRecoveringNodeCountedOnce(t *testing.T) {
	text := NewText()
	classes, _ := NewClasses(nil, 0)
	rec := NewRecorder(text, classes)
	rec.Observe(observe.Event{Kind: observe.Node, Node: "n1", Op: "acquire"})
	rec.Observe(observe.Event{Kind: observe.Node, Node: "n1", Op: "acquire", Reason: "recovering", Err: errors.New("lost its data")})
	var b strings.Builder
	if _, err := text.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`quorumlock_node_recovering_total{node="n1"} 1`, `quorumlock_node_request_duration_seconds_count{node="n1",op="acquire"} 1`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("exposition lacks %s:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "quorumlock_node_errors_total{") {
		t.Errorf("a recovering node counted as a failure:\n%s", b.String())
	}
}
