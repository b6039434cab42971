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

// machineUsage is where the whole machine's CPU went over a run's window,
// so a table can show whether the machine was saturated and how much of it
// the database took: on a small machine the server, PostgreSQL and the load
// generator share the cores, and a call's cost is theirs together.
type machineUsage struct {
	busy, total time.Duration // all cores: busy (not idle or iowait) and elapsed
	database    time.Duration // CPU of the processes named "postgres"
	generator   time.Duration // CPU of this process, the load generator
	// sawDatabase: a postgres process was visible at both ends (not, say,
	// when PostgreSQL runs in another container).
	sawDatabase bool
}

// machineSnapshot is the counters machineUsage is the difference of.
type machineSnapshot struct {
	busy, total time.Duration
	database    map[int]time.Duration // by PID
	generator   time.Duration
}

// takeMachineSnapshot reads /proc/stat and every postgres process's stat.
// A process that exits between the listing and the read is skipped.
func takeMachineSnapshot() (machineSnapshot, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSnapshot{}, fmt.Errorf("machine CPU: %w", err)
	}
	busy, total, err := parseProcStat(stat)
	if err != nil {
		return machineSnapshot{}, err
	}
	generator, err := processCPU(os.Getpid())
	if err != nil {
		return machineSnapshot{}, err
	}
	snap := machineSnapshot{busy: busy, total: total, database: map[int]time.Duration{}, generator: generator}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return machineSnapshot{}, fmt.Errorf("machine CPU: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if cpu, err := processCPU(pid); err == nil {
			snap.database[pid] = cpu
		}
	}
	return snap, nil
}

// since is the usage from earlier to s. A postgres process that started in
// between counts from zero; one that exited in between is lost (a backend
// of the run's pool lives as long as the run).
func (s machineSnapshot) since(earlier machineSnapshot) machineUsage {
	u := machineUsage{busy: s.busy - earlier.busy, total: s.total - earlier.total, generator: s.generator - earlier.generator,
		sawDatabase: len(s.database) > 0 && len(earlier.database) > 0}
	for pid, cpu := range s.database {
		u.database += cpu - earlier.database[pid]
	}
	return u
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq, steal, in clock ticks. Busy is all
// but idle and iowait.
func parseProcStat(stat []byte) (busy, total time.Duration, err error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("machine CPU: unexpected first line of /proc/stat %q", line)
	}
	var ticks [8]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(fields[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("machine CPU: /proc/stat field %q: %w", fields[i+1], err)
		}
	}
	var all int64
	for _, t := range ticks {
		all += t
	}
	idle := ticks[3] + ticks[4]
	unit := time.Second / clockTicks
	return time.Duration(all-idle) * unit, time.Duration(all) * unit, nil
}
