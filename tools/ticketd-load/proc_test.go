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
