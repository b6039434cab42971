package pgaftest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The processes of a formation: spawning pg_autoctl (as the postgres user
// under root), finding PostgreSQL's binaries and free ports, and tearing it
// all down.

// spawn starts `pg_autoctl args…` for n, logging to a file, in a process
// group of its own so that Kill9 and cleanup reach every process it starts.
func (c *Cluster) spawn(n *Node, args ...string) error {
	n.cmd = c.autoctlCmd(args...)
	n.log = filepath.Join(c.base, n.Name+".log")
	f, err := os.Create(n.log)
	if err != nil {
		return fmt.Errorf("%s log: %w", n.Name, err)
	}
	n.cmd.Stdout, n.cmd.Stderr = f, f
	n.cmd.SysProcAttr.Setpgid = true
	if err := n.cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", n.Name, err)
	}
	// The child holds its own copy of the descriptor.
	return f.Close()
}

func (c *Cluster) autoctlCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(c.autoctl, args...)
	cmd.Dir = c.base
	cmd.Env = c.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// cleanup kills every process group it started and any postmaster left
// behind, then removes the directories.
func (c *Cluster) cleanup(tb testing.TB) {
	if tb.Failed() {
		tb.Logf("pg_auto_failover logs:\n%s", c.Logs())
	}
	for _, n := range append([]*Node{c.Monitor}, c.Nodes[:]...) {
		if n == nil || n.cmd == nil || n.cmd.Process == nil {
			continue
		}
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		if pid := postmasterPID(n.PGData); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = n.cmd.Wait()
	}
	if err := os.RemoveAll(c.base); err != nil {
		tb.Errorf("remove %s: %v", c.base, err)
	}
	if c.fixedPorts {
		fixedPorts.Unlock()
	}
}

// postmasterPID reads the postmaster's PID from pgdata, or 0; it returns
// a PID only while that process still runs with this data directory, so a
// recycled PID is never killed.
func postmasterPID(pgdata string) int {
	f, err := os.Open(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), pgdata) {
		return 0
	}
	return pid
}

// findPGCtl finds pg_ctl of the newest PostgreSQL installed the Debian way,
// else on the PATH.
func findPGCtl() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	slices.SortFunc(found, func(a, b string) int { return majorOf(b) - majorOf(a) })
	if len(found) > 0 {
		return found[0], nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return p, nil
	}
	return "", errors.New("pg_auto_failover needs pg_ctl: no /usr/lib/postgresql/*/bin/pg_ctl and none on the PATH")
}

func majorOf(pgctl string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(pgctl))))
	return n
}

// fixedPorts is held by the formation of this process that uses ports
// 6000-6002, so a second one running in parallel takes others.
var fixedPorts sync.Mutex

// pickPorts returns the ports the formation's monitor and nodes listen on:
// 6000-6002, as docs/testing.md says, unless another formation has
// them (in this process or on this host), then three the kernel hands out.
func pickPorts(tb testing.TB) (ports [3]int, fixed bool) {
	tb.Helper()
	if fixedPorts.TryLock() {
		free := true
		for _, p := range [3]int{6000, 6001, 6002} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				break
			}
			_ = ln.Close()
		}
		if free {
			return [3]int{6000, 6001, 6002}, true
		}
		fixedPorts.Unlock()
	}
	var out [3]int
	for i := range out {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
	}
	return out, false
}

func chownAll(root string, uid, gid int) error {
	return filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// waitUntil polls cond every 200 ms until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
