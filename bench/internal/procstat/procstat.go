// Package procstat reads what the benchmark reports about a contender's
// process from Linux's /proc: CPU time, resident memory and its peak.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// which is 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// CPU returns the user plus system CPU time the process has used, all its
// threads included.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: /proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("procstat: /proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("procstat: /proc/%d/stat: bad utime/stime %q %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// Memory is a process's resident set, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: now
	Peak int64 // VmHWM: the highest since start or the last ResetPeak
}

// ReadMemory reads /proc/<pid>/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		f := bytes.Fields(value) // "1234 kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return Memory{}, fmt.Errorf("procstat: /proc/%d/status: %s: unexpected %q", pid, name, value)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("procstat: /proc/%d/status: %s: %w", pid, name, err)
		}
		*dst = kb << 10
	}
	if m.RSS == 0 {
		return Memory{}, fmt.Errorf("procstat: /proc/%d/status has no VmRSS", pid)
	}
	return m, nil
}

// ResetPeak sets the process's VmHWM back to its current RSS (Linux 4.0+),
// so that the next peak read covers only what happens from now on.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
