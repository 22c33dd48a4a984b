package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// subreaper: on Linux the supervisor keeps every orphan of CMD's tree.
const subreaper = true

func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// selfExe is this binary, even if it was replaced or deleted since.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// isTTY reports whether fd is a terminal: it has terminal attributes.
// A character device such as /dev/null is not one.
func isTTY(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// descendants lists the processes below root, from the parent links in
// /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	for queue := children[root]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// parentOf reads the parent PID from /proc/PID/stat. The command name
// there may hold spaces and parentheses: the fields follow the last ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // state, ppid, ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
