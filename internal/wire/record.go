package wire

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// recordPrefix starts the keys the library keeps for itself on a node:
// the node's record and StoredIDKey.
const recordPrefix = "quorumlock:"

// NodeRecordKey is the key of a server's record of its standing (see
// node.Standing and lua/standing.lua).
const NodeRecordKey = recordPrefix + "node"

// RecordHold reads the longest hold a node's record (its value as stored,
// see lua/standing.lua) was told of: zero when none, or unreadable.
func RecordHold(v string) time.Duration {
	f := strings.Fields(v)
	var ms string
	switch {
	case len(f) == 2 && f[0] == "V":
		ms = f[1]
	case len(f) == 5 && f[0] == "L":
		ms = f[4]
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/int64(time.Millisecond) {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// RecordKey is the key of the record that judges the standing of the node
// for the lock key name: NodeRecordKey, or in a Redis Cluster (perSlot)
// one per hash slot, named with a hash tag of name's slot, since a script
// may touch the keys of one slot only.
func RecordKey(name string, perSlot bool) string {
	if !perSlot {
		return NodeRecordKey
	}
	return NodeRecordKey + "{" + slotTag(Slot(name)) + "}"
}

// Slot is the Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash
// tag (the part between the first '{' and the next '}', when not empty),
// modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % slots)
}

const slots = 16384

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotTag returns a short string whose slot is slot, the same on every
// client: the first in the order "0".."z", "00".."zz", "000"... that lands
// there (every slot has one of at most four characters).
func slotTag(slot int) string {
	tagsOnce.Do(findTags)
	return tags[slot]
}

var (
	tagsOnce sync.Once
	tags     [slots]string
)

const tagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

func findTags() {
	left := slots
	var b [4]byte
	for n := 1; n <= len(b) && left > 0; n++ {
		total := 1
		for range n {
			total *= len(tagAlphabet)
		}
		for k := 0; k < total && left > 0; k++ {
			x := k
			for i := n - 1; i >= 0; i-- {
				b[i] = tagAlphabet[x%len(tagAlphabet)]
				x /= len(tagAlphabet)
			}
			s := string(b[:n])
			if sl := crc16(s) % slots; tags[sl] == "" {
				tags[sl] = s
				left--
			}
		}
	}
}
