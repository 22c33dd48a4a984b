package tick

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds a job name and a tick label, in bytes.
const MaxNameLen = 128

// maxPeriod keeps tick arithmetic in nanoseconds far from overflow.
const maxPeriod = 100 * 365 * 24 * time.Hour

// Schedule names the tick a replica means to run. Make one with Every, At
// or Named; the zero Schedule is ErrBadTick.
type Schedule struct {
	every, named bool
	period       time.Duration
	at           time.Time
	label        string
}

// Every derives the tick from the replica's clock: the multiple of period
// (counted from the Unix epoch, in UTC) nearest to now. Replicas whose
// clocks, or whose firing instants, are less than half a period apart from
// the boundary name the same tick. The tick is named like At's.
func Every(period time.Duration) Schedule { return Schedule{every: true, period: period} }

// At names the tick by its scheduled time, as RFC 3339 in UTC with as many
// fractional digits as needed ("2026-01-02T15:04:05Z").
func At(t time.Time) Schedule { return Schedule{at: t} }

// Named names the tick by a label the caller derives itself, such as
// `date -u +%Y-%m-%dT%H:%M` in a crontab: up to MaxNameLen bytes of
// printable UTF-8 without spaces or the characters { } * ? [ ] \ @ #.
func Named(label string) Schedule { return Schedule{named: true, label: label} }

// name returns the tick's name by the clock's now.
func (s Schedule) name(now time.Time) (string, error) {
	switch {
	case s.every:
		if s.period <= 0 || s.period > maxPeriod {
			return "", bad(ErrBadPeriod, "period %s is not in (0, %s]", s.period, maxPeriod)
		}
		return formatTime(nearest(now, s.period)), nil
	case !s.at.IsZero():
		return formatTime(s.at), nil
	case s.named:
		if err := checkName(s.label); err != nil {
			return "", bad(ErrBadTick, "tick label %q: %v", s.label, err)
		}
		return s.label, nil
	}
	return "", bad(ErrBadTick, "no tick: use Every, At or Named")
}

// nearest is the multiple of period since the Unix epoch nearest to now.
func nearest(now time.Time, period time.Duration) time.Time {
	ns, p := now.UnixNano(), int64(period)
	k := (ns + p/2) / p
	if ns+p/2 < 0 && (ns+p/2)%p != 0 {
		k-- // floor, not truncation, before the epoch
	}
	return time.Unix(0, k*p).UTC()
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// checkName validates a job name or a tick label: they become parts of lock
// keys, and ls and inspect split those keys apart again.
func checkName(s string) error {
	switch {
	case s == "":
		return errText("empty")
	case len(s) > MaxNameLen:
		return errText("longer than 128 bytes")
	case !utf8.ValidString(s):
		return errText("not valid UTF-8")
	case strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }):
		return errText("has a space or a character that does not print")
	case strings.ContainsAny(s, `{}*?[]\@#`):
		return errText(`has one of { } * ? [ ] \ @ #`)
	}
	return nil
}

type errText string

func (e errText) Error() string { return string(e) }
