//go:build linux

// Package image tests the image `make image` builds (the recipe is the
// Containerfile beside this file, scripts/image.sh lays out its context).
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Set by make test from scripts/ensure-podman.sh: podman's path, or why it
// could not be had (the test is then skipped with that reason).
const (
	envPodman      = "TICKETD_PODMAN"
	envUnavailable = "TICKETD_PODMAN_UNAVAILABLE"
)

// uid is the image's one user; /etc/passwd names it and /data is its own.
const uid = 65532

// TestImageRunsVersion builds the image with `make image` under a tag and
// version of its own, checks what it promises (FROM scratch: only the two
// layers of the recipe; a non-root numeric user with an /etc/passwd entry;
// ticketd as entrypoint; the CA bundle; a static binary; /data writable by
// the user) and runs `ticketd version` from it: with podman run where the
// machine lets a container start, else from the image's filesystem
// (podman create + export: no container is started, so no rlimit or cgroup
// is asked of the host).
func TestImageRunsVersion(t *testing.T) {
	t.Parallel()
	podman := findPodman(t)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	tag, version := "localhost/ticketd-imagetest:"+stamp, "imagetest-"+stamp
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	build := exec.CommandContext(ctx, "make", "-s", "-C", "../..", "image", "IMAGE="+tag, "VERSION="+version)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", tag).Run() })

	var img []struct {
		Config struct {
			User       string
			Entrypoint []string
			Cmd        []string
			WorkingDir string
			Labels     map[string]string
			Env        []string
		}
		RootFS struct{ Layers []string }
	}
	out := run(t, ctx, podman, "image", "inspect", tag)
	if err := json.Unmarshal(out, &img); err != nil || len(img) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	cfg := img[0].Config
	if want := fmt.Sprintf("%d:%d", uid, uid); cfg.User != want {
		t.Errorf("User = %q, want %q", cfg.User, want)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/ticketd"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) {
		t.Errorf("Entrypoint %q Cmd %q, want ticketd serve", cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.WorkingDir != "/data" || cfg.Labels["org.opencontainers.image.version"] != version {
		t.Errorf("WorkingDir %q, version label %q; want /data, %q", cfg.WorkingDir, cfg.Labels["org.opencontainers.image.version"], version)
	}
	if !slices.Contains(cfg.Env, "TICKETD_ADDR=0.0.0.0:8080") {
		t.Errorf("Env %q lacks TICKETD_ADDR=0.0.0.0:8080 (docker-compose.yml publishes 8080)", cfg.Env)
	}
	// A base image would bring layers of its own; the recipe's two COPYs are all.
	if n := len(img[0].RootFS.Layers); n != 2 {
		t.Errorf("%d layers, want the recipe's 2 (FROM scratch)", n)
	}

	files := exportFiles(t, ctx, podman, tag)
	checkFilesystem(t, files)

	want := "ticketd " + version + "\n"
	got, how := runVersion(t, ctx, podman, tag, files["usr/local/bin/ticketd"].body)
	if got != want {
		t.Fatalf("ticketd version %s printed %q, want %q", how, got, want)
	}
	t.Logf("ticketd version %s: %q", how, got)
}

func findPodman(t *testing.T) string {
	if reason := os.Getenv(envUnavailable); reason != "" {
		t.Skipf("podman unavailable: %s", reason)
	}
	if p := os.Getenv(envPodman); p != "" {
		return p
	}
	p, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (scripts/ensure-podman.sh installs it; make test runs it)")
	}
	return p
}

type file struct {
	hdr  *tar.Header
	body []byte
}

// exportFiles reads the image's filesystem through a created, never
// started, container.
func exportFiles(t *testing.T, ctx context.Context, podman, tag string) map[string]file {
	t.Helper()
	id := strings.TrimSpace(string(run(t, ctx, podman, "create", tag)))
	t.Cleanup(func() { _ = exec.Command(podman, "rm", "--force", id).Run() })
	tr := tar.NewReader(bytes.NewReader(run(t, ctx, podman, "export", id)))
	files := map[string]file{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("podman export: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("podman export %s: %v", hdr.Name, err)
		}
		files[strings.Trim(filepath.Clean(hdr.Name), "/")] = file{hdr, body}
	}
}

func checkFilesystem(t *testing.T, files map[string]file) {
	t.Helper()
	passwd := fmt.Sprintf("ticketd:x:%d:%d:", uid, uid)
	if !strings.HasPrefix(string(files["etc/passwd"].body), passwd) {
		t.Errorf("/etc/passwd = %q, want an entry %s…", files["etc/passwd"].body, passwd)
	}
	host, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("the host's CA bundle: %v", err)
	}
	if ca := files["etc/ssl/certs/ca-certificates.crt"].body; !bytes.Equal(ca, host) {
		t.Errorf("the image's CA bundle (%d bytes) is not the host's (%d bytes)", len(ca), len(host))
	}
	if data, ok := files["data"]; !ok || data.hdr.Typeflag != tar.TypeDir || data.hdr.Uid != uid || data.hdr.FileInfo().Mode().Perm()&0o200 == 0 {
		t.Errorf("/data is missing or not a directory the user %d may write: %+v", uid, data.hdr)
	}
	if tmp, ok := files["tmp"]; !ok || tmp.hdr.FileInfo().Mode()&os.ModeSticky == 0 || tmp.hdr.FileInfo().Mode().Perm() != 0o777 {
		t.Errorf("/tmp is missing or not 1777: %+v", tmp.hdr)
	}
	bin := files["usr/local/bin/ticketd"].body
	exe, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/usr/local/bin/ticketd is not an ELF binary: %v", err)
	}
	for _, p := range exe.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/usr/local/bin/ticketd asks for a dynamic loader; the image has none (build it with CGO_ENABLED=0)")
		}
	}
}

// runVersion runs `ticketd version` with podman run, first with podman's
// runtime, then with runc where it is installed (crun refuses hosts whose
// cgroups are in hybrid mode), with rlimits lowered to 1024 (podman's
// defaults raise them, which an unprivileged host refuses; lowering a limit
// needs no privilege). Where the host refuses every container it runs the
// binary exported from the image, and says so.
func runVersion(t *testing.T, ctx context.Context, podman, tag string, bin []byte) (out, how string) {
	t.Helper()
	runArgs := []string{"run", "--rm", "--network", "none",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", tag, "version"}
	attempts := [][]string{runArgs}
	if _, err := exec.LookPath("runc"); err == nil {
		attempts = append(attempts, append([]string{"--runtime", "runc"}, runArgs...))
	}
	var refusals []string
	for _, args := range attempts {
		cmd := exec.CommandContext(ctx, podman, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		if err == nil {
			if len(refusals) > 0 {
				t.Logf("refused before: %s", strings.Join(refusals, "\n"))
			}
			return string(got), "(podman " + strings.Join(args, " ") + ")"
		}
		// Only the host's refusals (of rlimits, of cgroups) fall through to
		// the next way; a container that starts and fails is the image's.
		if msg := stderr.String(); !strings.Contains(msg, "rlimit") && !strings.Contains(msg, "cgroup") {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		refusals = append(refusals, fmt.Sprintf("podman %s: %v: %s", strings.Join(args[:len(args)-len(runArgs)+1], " "), err, strings.TrimSpace(stderr.String())))
	}
	t.Logf("no container starts on this machine, so the image's binary runs from its filesystem:\n%s", strings.Join(refusals, "\n"))
	path := filepath.Join(t.TempDir(), "ticketd")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		t.Fatalf("the image's ticketd version: %v", err)
	}
	return string(got), "(from the image's filesystem)"
}

func run(t *testing.T, ctx context.Context, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}
