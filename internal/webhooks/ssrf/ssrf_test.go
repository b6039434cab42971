package ssrf

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// table is a Resolver with fixed answers that a test may change.
type table struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
}

func (t *table) set(host string, addrs ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hosts[host] = nil
	for _, a := range addrs {
		t.hosts[host] = append(t.hosts[host], netip.MustParseAddr(a))
	}
}

func (t *table) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr        string
		strict, dev bool // allowed in production, allowed with AllowPrivate
	}{
		{"93.184.215.14", true, true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true, true},
		{"127.0.0.1", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"10.1.2.3", false, true},
		{"172.16.0.1", false, true},
		{"192.168.1.1", false, true},
		{"fd12:3456::1", false, true},
		{"100.64.0.1", false, true},
		{"169.254.169.254", false, false},
		{"fd00:ec2::254", false, false},
		{"169.254.10.1", false, false},
		{"fe80::1", false, false},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"240.0.0.1", false, false},
	}
	for _, c := range cases {
		ip := netip.MustParseAddr(c.addr)
		for _, g := range []struct {
			guard Guard
			want  bool
		}{{Guard{}, c.strict}, {Guard{AllowPrivate: true}, c.dev}} {
			err := g.guard.CheckAddr(ip)
			if (err == nil) != g.want {
				t.Errorf("AllowPrivate=%v CheckAddr(%s) = %v, want allowed=%v", g.guard.AllowPrivate, c.addr, err, g.want)
			}
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("CheckAddr(%s) error %v does not wrap ErrRefused", c.addr, err)
			}
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	dns := &table{hosts: map[string][]netip.Addr{}}
	dns.set("hooks.example.com", "93.184.215.14")
	dns.set("internal.example.com", "10.0.0.7")
	dns.set("metadata.example.com", "169.254.169.254")
	dns.set("mixed.example.com", "93.184.215.14", "127.0.0.1")
	dns.set("localhost", "127.0.0.1")
	strict := Guard{Resolver: dns}
	dev := Guard{AllowPrivate: true, Resolver: dns}
	cases := []struct {
		guard   Guard
		url     string
		refused string // "" when allowed; else a word the error must contain
	}{
		{strict, "https://hooks.example.com/ticketd", ""},
		{strict, "http://hooks.example.com/ticketd", "https"},
		{strict, "ftp://hooks.example.com/", "scheme"},
		{strict, "https://user:pw@hooks.example.com/", "credentials"},
		{strict, "https:///nohost", "no host"},
		{strict, "https://internal.example.com/", "private"},
		{strict, "https://metadata.example.com/", "metadata"},
		{strict, "https://mixed.example.com/", "loopback"},
		{strict, "https://localhost:8787/", "loopback"},
		{strict, "https://127.0.0.1/", "loopback"},
		{strict, "https://[::1]/", "loopback"},
		{strict, "https://169.254.169.254/latest/meta-data", "metadata"},
		{strict, "https://unknown.example.com/", "no such host"},
		{dev, "http://127.0.0.1:8787/", ""},
		{dev, "http://localhost:8787/", ""},
		{dev, "http://internal.example.com/", ""},
		{dev, "http://metadata.example.com/", "metadata"},
		{dev, "http://[fe80::1]/", "link-local"},
	}
	for _, c := range cases {
		_, err := c.guard.CheckURL(context.Background(), c.url)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("AllowPrivate=%v CheckURL(%s) = %v, want allowed", c.guard.AllowPrivate, c.url, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("AllowPrivate=%v CheckURL(%s) = %v, want refused mentioning %q", c.guard.AllowPrivate, c.url, err, c.refused)
		}
	}
}

func TestDialChecksTheAddressAtConnectTime(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dns := &table{hosts: map[string][]netip.Addr{}}
	dns.set("hooks.example.com", "93.184.215.14")
	strict := Guard{Resolver: dns}
	if _, err := strict.CheckURL(context.Background(), "https://hooks.example.com:"+port+"/"); err != nil {
		t.Fatalf("registration with a public address: %v", err)
	}

	t.Run("NameRebindsToLoopback", func(t *testing.T) {
		dns.set("hooks.example.com", "127.0.0.1")
		_, err := strict.DialContext(context.Background(), "tcp", "hooks.example.com:"+port)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("dial after the name moved to loopback: %v, want ErrRefused", err)
		}
	})
	t.Run("ControlHookRefusesTheActualDestination", func(t *testing.T) {
		// Bypasses resolve: only the socket-level hook stands in the way.
		d := net.Dialer{Control: strict.control}
		_, err := d.Dial("tcp", ln.Addr().String())
		if !errors.Is(err, ErrRefused) {
			t.Errorf("dial 127.0.0.1 through the control hook: %v, want ErrRefused", err)
		}
	})
	t.Run("DevAllowsLoopback", func(t *testing.T) {
		c, err := Guard{AllowPrivate: true, Resolver: dns}.DialContext(context.Background(), "tcp", "hooks.example.com:"+port)
		if err != nil {
			t.Fatalf("dev dial to loopback: %v", err)
		}
		c.Close()
	})
}
