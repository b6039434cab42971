package ssrf

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
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
		// IPv6 forms that embed an IPv4 address (docs/contract.md#fair-share): judged by
		// the embedded address, or refused where it cannot be read off.
		{"64:ff9b::a9fe:a9fe", false, false}, // NAT64 → 169.254.169.254
		{"64:ff9b::a00:1", false, true},      // NAT64 → 10.0.0.1
		{"64:ff9b::7f00:1", false, true},     // NAT64 → 127.0.0.1
		{"64:ff9b::5db8:d70e", true, true},   // NAT64 → 93.184.215.14
		{"64:ff9b:1::a00:1", false, false},   // local-use NAT64: refused
		{"64:ff9b:1:ffff::1", false, false},
		{"::127.0.0.1", false, true},             // IPv4-compatible → 127.0.0.1
		{"::a9fe:a9fe", false, false},            // IPv4-compatible → 169.254.169.254
		{"::5db8:d70e", true, true},              // IPv4-compatible → 93.184.215.14
		{"::ffff:0:7f00:1", false, true},         // IPv4-translated → 127.0.0.1
		{"::ffff:0:a9fe:a9fe", false, false},     // IPv4-translated → metadata
		{"::ffff:169.254.169.254", false, false}, // IPv4-mapped → metadata
		{"::ffff:10.0.0.1", false, true},
		{"2002:a9fe:a9fe::", false, false},                     // 6to4 → 169.254.169.254
		{"2002:7f00:1::1", false, true},                        // 6to4 → 127.0.0.1
		{"2002:c0a8:101::", false, true},                       // 6to4 → 192.168.1.1
		{"2002:5db8:d70e::1", true, true},                      // 6to4 → 93.184.215.14
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, false}, // Teredo: refused
		{"2001::1", false, false},
		{"fec0::1", false, false}, // site-local: refused
		{"feff::1", false, false},
		{"2001:db8::1", false, false}, // documentation
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
	dns.set("nat64.example.com", "64:ff9b::a00:7") // what DNS64 makes of 10.0.0.7
	strict := Guard{Resolver: dns}
	dns.set("api.example.com", "93.184.215.14")
	dns.set("a.b.example.net", "93.184.215.14")
	dev := Guard{AllowPrivate: true, Resolver: dns}
	plain := Guard{AllowPrivate: true, PlainPrivate: true, Resolver: dns}
	listed := Guard{Hosts: []string{"api.example.com", "*.example.net"}, Resolver: dns}
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
		{strict, "https://internal.example.com/", uniform},
		{strict, "https://metadata.example.com/", uniform},
		{strict, "https://mixed.example.com/", uniform},
		{strict, "https://localhost:8787/", uniform},
		{strict, "https://nat64.example.com/", uniform},
		{strict, "https://[64:ff9b::a9fe:a9fe]/", uniform},
		{strict, "https://[::127.0.0.1]/", uniform},
		{strict, "https://[2002:a9fe:a9fe::]/", uniform},
		{strict, "https://[::ffff:0:7f00:1]/", uniform},
		{strict, "https://[64:ff9b::a00:1]/", uniform},
		{strict, "https://127.0.0.1/", uniform},
		{strict, "https://[::1]/", uniform},
		{strict, "https://169.254.169.254/latest/meta-data", uniform},
		{strict, "https://2130706433/", uniform},
		{strict, "https://0x7f000001/", uniform},
		{strict, "https://127.1/", uniform},
		// Judged at dial time: a refusal here would tell it from a refused name.
		{strict, "https://unknown.example.com/", ""},
		{dev, "http://127.0.0.1:8787/", ""},
		{dev, "http://localhost:8787/", ""},
		{dev, "http://internal.example.com/", ""},
		{dev, "http://metadata.example.com/", uniform},
		{dev, "http://[fe80::1]/", uniform},
		{plain, "http://internal.example.com/", ""},
		{plain, "https://hooks.example.com/", ""},
		{plain, "http://hooks.example.com/", uniform},
		{listed, "https://hooks.example.com/", "not one of the hosts"},
		{listed, "https://api.example.com/", ""},
		{listed, "https://a.b.example.net/", ""},
		{listed, "https://example.net/", "not one of the hosts"},
	}
	for _, c := range cases {
		_, err := c.guard.CheckURL(context.Background(), c.url)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("AllowPrivate=%v CheckURL(%s) = %v, want allowed", c.guard.AllowPrivate, c.url, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("AllowPrivate=%v CheckURL(%s) = %v, want refused mentioning %q", c.guard.AllowPrivate, c.url, err, c.refused)
		case c.refused == uniform && err.Error() != "destination refused: ticketd does not connect to "+hostOf(c.url):
			t.Errorf("CheckURL(%s) = %v, want the one refusal text", c.url, err)
		}
	}
}

// uniform stands for the one refusal text of an address, whatever its cause.
const uniform = "ticketd does not connect to"

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

func TestResolverErrorsDoNotNameTheResolver(t *testing.T) {
	t.Parallel()
	failing := resolverFunc(func(context.Context, string, string) ([]netip.Addr, error) {
		return nil, &net.DNSError{Err: "server misbehaving", Name: "hooks.example.com", Server: "10.0.0.2:53"}
	})
	g := Guard{Resolver: failing}
	if _, err := g.CheckURL(context.Background(), "https://hooks.example.com/"); err != nil {
		t.Errorf("CheckURL with a failing resolver = %v, want it accepted and judged at dial time", err)
	}
	_, err := g.DialContext(context.Background(), "tcp", "hooks.example.com:443")
	if err == nil || strings.Contains(err.Error(), "10.0.0.2") {
		t.Errorf("dial with a failing resolver = %v, want an error that does not name the DNS server", err)
	}
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
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
	t.Run("NameRebindsIntoNAT64", func(t *testing.T) {
		// DNS64 turns an internal A record into 64:ff9b::/96.
		dns.set("hooks.example.com", "64:ff9b::7f00:1")
		_, err := strict.DialContext(context.Background(), "tcp", "hooks.example.com:"+port)
		if !errors.Is(err, ErrRefused) || strings.Contains(err.Error(), "7f00") || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("dial after the name moved into NAT64: %v, want a refusal that names no address", err)
		}
	})
	t.Run("ControlHookRefusesEmbeddedForms", func(t *testing.T) {
		d := net.Dialer{Control: strict.control}
		for _, a := range []string{"64:ff9b::a9fe:a9fe", "::127.0.0.1", "::ffff:0:7f00:1", "2002:a9fe:a9fe::", "2001::1", "fec0::1", "64:ff9b:1::1"} {
			_, err := d.Dial("tcp", net.JoinHostPort(a, port))
			if !errors.Is(err, ErrRefused) {
				t.Errorf("dial [%s] through the control hook: %v, want ErrRefused", a, err)
			}
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
		dns.set("hooks.example.com", "127.0.0.1")
		c, err := Guard{AllowPrivate: true, Resolver: dns}.DialContext(context.Background(), "tcp", "hooks.example.com:"+port)
		if err != nil {
			t.Fatalf("dev dial to loopback: %v", err)
		}
		c.Close()
	})
}
