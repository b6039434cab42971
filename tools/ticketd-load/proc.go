package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// serverUsage is what /proc says about the server over a run's window.
type serverUsage struct {
	cpu     time.Duration // user + system CPU time spent in the window
	peakRSS int64         // bytes, the process's high-water mark (VmHWM)
	err     error
}

// clockTicks is the unit of utime and stime in /proc/PID/stat. Linux fixes
// USER_HZ at 100 for every architecture's user-space ABI, so it is a
// constant rather than a sysconf call.
const clockTicks = 100

// processCPU returns the user plus system CPU time the process has used.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU: %w", err)
	}
	return parseStatCPU(data)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line. The command name (field 2) is in parentheses and may
// itself hold spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("server CPU: /proc stat line without a command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("server CPU: /proc stat line has %d fields after the name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("server CPU: /proc stat field %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// processPeakRSS returns the process's peak resident set size in bytes.
func processPeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("server peak RSS: %w", err)
	}
	return parseStatusHWM(data)
}

// parseStatusHWM reads the VmHWM line ("VmHWM:     35012 kB") of
// /proc/PID/status.
func parseStatusHWM(status []byte) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("server peak RSS: unexpected line %q", strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("server peak RSS: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("server peak RSS: no VmHWM line in /proc status")
}
