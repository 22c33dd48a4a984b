package main

import "github.com/quorumlock/quorumlock/redlock"

// quorumlock with release notifications off (redlock.WithReleaseNotifications
// (false)): waiters sleep the retry policy's delays instead of waking on the
// holder's release. Shown beside the default (on) in the contended scenario.
const (
	libQLNoNotify        = "quorumlock-nonotify"
	libQLRueidisNoNotify = "quorumlock-rueidis-nonotify"
)

// noNotify names the notifications-off twin of each quorumlock library.
var noNotify = map[string]string{libQL: libQLNoNotify, libQLRueidis: libQLRueidisNoNotify}

// noNotifyContenders builds the notifications-off twins of the quorumlock
// contenders that were asked for (-libs quorumlock selects both variants).
func (e *env) noNotifyContenders(addrs []string) ([]*contender, error) {
	off := redlock.WithReleaseNotifications(false)
	var out []*contender
	if e.want(libQL) || e.want(libQLNoNotify) {
		c := &contender{lib: libQLNoNotify}
		for range contendedClients {
			l, _, err := newQL(addrs, lockTTL, nil, off)
			if err != nil {
				return nil, err
			}
			c.clients = append(c.clients, l)
		}
		out = append(out, c)
	}
	if e.want(libQLRueidis) || e.want(libQLRueidisNoNotify) {
		c := &contender{lib: libQLRueidisNoNotify}
		for range contendedClients {
			l, _, err := newQLRueidis(addrs, lockTTL, nil, off)
			if err != nil {
				return nil, err
			}
			c.clients = append(c.clients, l)
		}
		out = append(out, c)
	}
	return out, nil
}
