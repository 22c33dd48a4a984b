package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"
)

// seconds is a duration flag that reads a bare number as seconds, as
// flock(1) reads -w: "-w 5" is 5s, "-w 1.5" is 1.5s, "-w 500ms" is 500ms.
type seconds struct {
	d   *time.Duration
	set bool // given on the command line
}

var _ flag.Value = (*seconds)(nil)

func durationFlag(fs *flag.FlagSet, d *time.Duration, name string, def time.Duration, usage string) *seconds {
	*d = def
	s := &seconds{d: d}
	fs.Var(s, name, usage)
	return s
}

func (s *seconds) String() string {
	if s == nil || s.d == nil {
		return ""
	}
	return s.d.String()
}

// errDuration is the reason flag reports as `invalid value "x" for flag -w: ...`.
var errDuration = errors.New("not a duration: give seconds (30, 1.5) or a unit (500ms, 30s, 2m)")

func (s *seconds) Set(v string) error {
	d, err := parseSeconds(v)
	if err != nil {
		return err
	}
	*s.d, s.set = d, true
	return nil
}

// parseSeconds parses a Go duration ("1m30s") or a bare number of seconds.
func parseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		// ParseFloat accepts NaN, Inf and hex: only plain decimals here.
		if strings.ContainsAny(v, "nNiIxXpP") || f > float64(1<<63-1)/float64(time.Second) || f < -float64(1<<63-1)/float64(time.Second) {
			return 0, errDuration
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errDuration
	}
	return d, nil
}
