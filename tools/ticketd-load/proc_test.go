package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	// A command name with a space and a ')' must not shift the fields.
	line := []byte("4242 (tick) d) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 12 0 100 1000000 2000 18446744073709551615\n")
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3800 * time.Millisecond; got != want { // (250+130) ticks of 10ms
		t.Errorf("parseStatCPU = %v, want %v", got, want)
	}
	for _, bad := range []string{"4242 no name S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 x 130 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded, want an error", bad)
		}
	}
}

func TestParseStatusHWM(t *testing.T) {
	t.Parallel()
	status := "Name:\tticketd\nVmPeak:\t  900000 kB\nVmHWM:\t   35840 kB\nVmRSS:\t   30000 kB\n"
	got, err := parseStatusHWM([]byte(status))
	if err != nil || got != 35840*1024 {
		t.Errorf("parseStatusHWM = %d, %v; want %d", got, err, 35840*1024)
	}
	for _, bad := range []string{"Name:\tx\n", "VmHWM:\t12 MB\n", "VmHWM:\tlots kB\n"} {
		if _, err := parseStatusHWM([]byte(bad)); err == nil {
			t.Errorf("parseStatusHWM(%q) succeeded, want an error", bad)
		}
	}
}

// TestProcessReadsThisProcess checks the parsers against the real /proc
// format of the running kernel.
func TestProcessReadsThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("processCPU(self): %v", err)
	}
	if rss, err := processPeakRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("processPeakRSS(self) = %d, %v; want a positive size", rss, err)
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := []byte("cpu  100 5 40 800 50 3 2 0 0 0\ncpu0 50 2 20 400 25 1 1 0 0 0\n")
	busy, total, err := parseProcStat(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1500 * time.Millisecond; busy != want { // 100+5+40+3+2 ticks
		t.Errorf("busy = %v, want %v", busy, want)
	}
	if want := 10 * time.Second; total != want { // 1000 ticks
		t.Errorf("total = %v, want %v", total, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8"} {
		if _, _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) succeeded, want an error", bad)
		}
	}
}

// A postgres process that started in the window counts from zero; the
// machine's counters are differences.
func TestMachineUsageSince(t *testing.T) {
	t.Parallel()
	before := machineSnapshot{busy: time.Second, total: 4 * time.Second, generator: time.Second,
		database: map[int]time.Duration{10: time.Second, 11: 2 * time.Second}}
	after := machineSnapshot{busy: 3 * time.Second, total: 8 * time.Second, generator: 1200 * time.Millisecond,
		database: map[int]time.Duration{10: 1500 * time.Millisecond, 12: 300 * time.Millisecond}}
	got := after.since(before)
	want := machineUsage{busy: 2 * time.Second, total: 4 * time.Second, database: 800 * time.Millisecond, generator: 200 * time.Millisecond, sawDatabase: true}
	if got != want {
		t.Errorf("since = %+v, want %+v", got, want)
	}
}

// No postgres process in sight (another container) is not zero CPU.
func TestMachineUsageWithoutDatabase(t *testing.T) {
	t.Parallel()
	if u := (machineSnapshot{}).since(machineSnapshot{}); u.sawDatabase {
		t.Errorf("since = %+v; want sawDatabase false when no postgres process was seen", u)
	}
}
