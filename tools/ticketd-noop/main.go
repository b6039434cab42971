// Command ticketd-noop is the floor ticketd's MCP performance is measured
// against: a go-sdk server (the version in go.mod) with one tool, "noop",
// that does nothing, served statelessly over Streamable HTTP exactly as
// ticketd serves its tools. Whatever a ticketd call costs beyond a noop call
// is ticketd's own code and its database.
//
//	ticketd-noop -addr 127.0.0.1:8090
//
// It listens on loopback only, answers GET /healthz with 200 once it is
// serving, and stops on SIGINT or SIGTERM. With -token it also requires
// "Authorization: Bearer TOKEN" on /mcp, a constant-time comparison that
// costs next to nothing, so the floor stays the SDK's own cost.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "ticketd-noop: %v\n", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. args[0] is the program name.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "loopback listen address host:port")
	token := fs.String("token", "", "bearer token /mcp requires (default: none required)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := checkLoopback(*addr); err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: handler(*token), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s/mcp\n", ln.Addr())
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// handler serves the noop tool on /mcp and a health check on /healthz.
func handler(token string) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "ticketd-noop", Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "noop", Description: "Does nothing."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	// One server for every request and Stateless, as ticketd does, so the
	// SDK does the same per-request work in both.
	var mcpHandler http.Handler = mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})
	if token != "" {
		mcpHandler = requireToken(token, mcpHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

func requireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkLoopback refuses a non-loopback address: this server exists for
// local benchmarks only.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: want host:port", addr)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.Unmap().IsLoopback() {
		return fmt.Errorf("-addr %q: host must be a loopback IP such as 127.0.0.1", addr)
	}
	return nil
}
