package fakeresp

import "strconv"

// Fault is one way for a node to answer badly.
type Fault struct {
	Name   string
	Reply  []byte // what the node answers; nothing at all when empty
	Hangup bool   // close the connection after answering
	// Panics: the go-redis client panics decoding it (it allocates the
	// announced length); the library must turn that into a node error.
	Panics bool
}

// Faults are the bad answers every client must survive.
var Faults = []Fault{
	{Name: "garbage", Reply: []byte("\x00\xffnot resp at all\r\n")},
	{Name: "unknown-type", Reply: []byte("@what\r\n")},
	{Name: "wrong-type-integer", Reply: []byte(":42\r\n")},
	{Name: "wrong-type-status", Reply: []byte("+OK\r\n")},
	{Name: "wrong-type-array", Reply: []byte("*3\r\n$1\r\nx\r\n:-7\r\n*0\r\n")},
	{Name: "error-reply", Reply: []byte("-ERR something odd\r\n")},
	{Name: "bad-number", Reply: []byte(":12x4\r\n")},
	// Two replies to one command: a client that matches replies to
	// commands in order must not take the second for another's.
	{Name: "answers-twice", Reply: []byte(":1\r\n:1\r\n")},
	{Name: "huge-bulk", Reply: []byte("$1000000000000000\r\n"), Panics: true},
	{Name: "huge-array", Reply: []byte("*1000000000000000\r\n"), Panics: true},
	{Name: "huge-nested-array", Reply: []byte("*2\r\n:1\r\n*1000000000000000\r\n"), Panics: true},
	{Name: "huge-nested-bulk", Reply: []byte("*3\r\n:1\r\n$1\r\nx\r\n$1000000000000000\r\n"), Panics: true},
	{Name: "negative-bulk", Reply: []byte("$-7\r\n")},
	{Name: "truncated-bulk", Reply: []byte("$10\r\nabc"), Hangup: true},
	{Name: "truncated-array", Reply: []byte("*4\r\n:1\r\n:2\r\n"), Hangup: true},
	{Name: "hangup", Hangup: true},
	{Name: "silent"},
}

// identity is the INFO reply of Lying: a run id of its own per server
// and noeviction, so that a client accepts the node and sends it its
// lock commands.
func identity(runID string) []byte {
	info := "# Server\r\nrun_id:" + runID + "\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n"
	return []byte("$" + strconv.Itoa(len(info)) + "\r\n" + info + "\r\n")
}

// Lying answers the handshake like a server that predates it (unknown
// command: clients fall back to RESP2 and carry on), INFO with an identity
// of runID (with f too when runID is empty), and every other command with
// f.
func Lying(runID string, f Fault) Reply {
	return func(cmd []string) ([]byte, bool) {
		if len(cmd) == 0 {
			return f.Reply, f.Hangup
		}
		switch cmd[0] {
		case "HELLO", "CLIENT", "AUTH", "SELECT", "READONLY":
			return []byte("-ERR unknown command '" + cmd[0] + "'\r\n"), false
		case "INFO":
			if runID != "" {
				return identity(runID), false
			}
		}
		return f.Reply, f.Hangup
	}
}

// Raw answers every command, the handshake included, with out.
func Raw(out []byte) Reply {
	return func([]string) ([]byte, bool) { return out, false }
}
