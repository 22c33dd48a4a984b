package memnode

// globMatch reports whether s matches the Redis glob pattern (as SCAN MATCH
// and KEYS read it: * ? [abc] [^a-z] and \ escapes), so that the memory
// node lists what a Redis node would. It is Redis's stringmatchlen, on
// bytes.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	for p < len(pattern) {
		switch pattern[p] {
		case '*':
			for p+1 < len(pattern) && pattern[p+1] == '*' {
				p++
			}
			if p+1 == len(pattern) {
				return true
			}
			for j := i; j <= len(s); j++ {
				if globMatch(pattern[p+1:], s[j:]) {
					return true
				}
			}
			return false
		case '?':
			if i >= len(s) {
				return false
			}
			i++
		case '[':
			if i >= len(s) {
				return false
			}
			var match bool
			match, p = matchClass(pattern, p+1, s[i])
			if !match {
				return false
			}
			i++
		case '\\':
			if p+1 < len(pattern) {
				p++
			}
			fallthrough
		default:
			if i >= len(s) || pattern[p] != s[i] {
				return false
			}
			i++
		}
		p++
	}
	return i == len(s)
}

// matchClass reports whether b matches the class of pattern that starts at
// p (just after its '['), and returns the index of the class's closing ']'
// (the pattern's last byte when the class is unclosed: it ends the
// pattern, as in Redis).
func matchClass(pattern string, p int, b byte) (bool, int) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for {
		if p >= len(pattern) {
			p--
			break
		}
		c := pattern[p]
		switch {
		case c == '\\' && p+1 < len(pattern):
			p++
			match = match || pattern[p] == b
		case c == ']':
		case p+2 < len(pattern) && pattern[p+1] == '-':
			lo, hi := c, pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			p += 2
			match = match || (b >= lo && b <= hi)
		default:
			match = match || c == b
		}
		if c == ']' {
			break
		}
		p++
	}
	return match != not, p
}
