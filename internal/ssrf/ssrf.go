// Package ssrf keeps ticketd's outgoing requests (webhook deliveries,
// tracker calls) away from addresses a tenant must not reach through ticketd:
// the host's own services, the private network and the cloud metadata
// endpoint. A URL is checked when it is registered and every connection is
// checked again at dial time against the address actually dialled, because a
// name that resolved to a public address yesterday may resolve to 10.0.0.5
// today.
//
// Every refusal of an address says the same thing whatever the cause (a
// private literal, a name resolving to one, the metadata address), so that
// registration errors and delivery logs do not map the internal network.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is wrapped by every refusal, so callers can tell a policy
// decision from a network failure.
var ErrRefused = errors.New("destination refused")

// Resolver turns a host name into addresses; *net.Resolver satisfies it and
// tests substitute a fixed table.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard applies the policy. The zero value is the production policy (https
// only, public addresses only, any host) with the system resolver.
type Guard struct {
	// AllowPrivate admits http:// URLs and loopback, private (RFC 1918, ULA)
	// and shared (CGNAT) addresses: for a developer's machine or a deployment
	// whose receivers live on the same private network. Link-local,
	// metadata, multicast and unspecified addresses stay refused even then.
	AllowPrivate bool
	// PlainPrivate narrows AllowPrivate's http:// to private and loopback
	// destinations: plain http never leaves the operator's network
	// (ForScheme applies it to a dial).
	PlainPrivate bool
	// Hosts, when not nil, are the only hosts a URL may name: an exact name
	// or address, or "*.example.com" for any name below example.com.
	Hosts []string
	// Resolver resolves names at registration and at dial time; nil means
	// net.DefaultResolver.
	Resolver Resolver

	// publicRefused is set by ForScheme for plain http under PlainPrivate.
	publicRefused bool
}

// ForScheme returns the guard for a request over scheme: under
// PlainPrivate, an http request may reach only private and loopback
// addresses. A transport that dials for both schemes uses one guard each.
func (g Guard) ForScheme(scheme string) Guard {
	if scheme == "http" && g.PlainPrivate {
		g.publicRefused = true
	}
	return g
}

var (
	cgnat    = netip.MustParsePrefix("100.64.0.0/10")
	metadata = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	}
	// Ranges that are never a legitimate receiver: "this network",
	// documentation, benchmarking and reserved blocks.
	reserved = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("100::/64"),
		netip.MustParsePrefix("2001:db8::/32"),
	}
	// IPv6 ranges refused outright because they carry, or may carry, an
	// IPv4 address somewhere a translator or tunnel delivers to, in a
	// position that cannot be read off the address alone: local-use NAT64
	// (RFC 8215; its operator picks the prefix length and so where the IPv4
	// address sits), Teredo (the client's address obfuscated behind a
	// relay) and the deprecated site-local block, which some stacks still
	// route internally.
	tunnels = []netip.Prefix{
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("2001::/32"),
		netip.MustParsePrefix("fec0::/10"),
	}
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 well-known prefix: IPv4 in the last 32 bits
	compatible = netip.MustParsePrefix("::/96")           // deprecated IPv4-compatible: IPv4 in the last 32 bits
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT IPv4-translated (RFC 2765): IPv4 in the last 32 bits
	sixToFour  = netip.MustParsePrefix("2002::/16")       // 6to4: IPv4 in bits 16-47
)

// embeddedIPv4 returns the IPv4 address that an IPv6 address of a form a
// translator or tunnel turns into IPv4 carries, so it can be judged by where
// it really leads: 64:ff9b::a9fe:a9fe is the metadata address through NAT64.
// IPv4-mapped addresses are unmapped before this (netip.Addr.Unmap).
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback():
		// In ::/96, but meant as themselves: judged as IPv6 below.
		return netip.Addr{}, false
	case nat64.Contains(ip), compatible.Contains(ip), translated.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// CheckAddr reports whether ip may be dialled under g's policy. An IPv6
// address that embeds an IPv4 one is judged by the IPv4 address. Its error
// says why, for tests; CheckURL and DialContext never pass that on, and
// refuse in one text whatever the reason.
func (g Guard) CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	for _, p := range tunnels {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is in %s, which can lead anywhere through a translator or tunnel", ErrRefused, ip, p)
		}
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if err := g.CheckAddr(v4); err != nil {
			return fmt.Errorf("%s embeds %s: %w", ip, v4, err)
		}
		return nil
	}
	switch {
	case !ip.IsValid():
		return fmt.Errorf("%w: invalid address", ErrRefused)
	case slices.Contains(metadata, ip):
		return fmt.Errorf("%w: %s is a cloud metadata address", ErrRefused, ip)
	case ip.IsUnspecified():
		return fmt.Errorf("%w: %s is unspecified", ErrRefused, ip)
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsLinkLocalMulticast():
		return fmt.Errorf("%w: %s is multicast", ErrRefused, ip)
	case ip.IsLinkLocalUnicast():
		return fmt.Errorf("%w: %s is link-local", ErrRefused, ip)
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is in reserved range %s", ErrRefused, ip, p)
		}
	}
	private := ip.IsLoopback() || ip.IsPrivate() || cgnat.Contains(ip)
	switch {
	case g.AllowPrivate && g.publicRefused && !private:
		return fmt.Errorf("%w: %s is public, and plain http may reach only the private network", ErrRefused, ip)
	case g.AllowPrivate:
		return nil
	case ip.IsLoopback():
		return fmt.Errorf("%w: %s is loopback (allowed only in dev or with private destinations allowed)", ErrRefused, ip)
	case ip.IsPrivate():
		return fmt.Errorf("%w: %s is a private address", ErrRefused, ip)
	case cgnat.Contains(ip):
		return fmt.Errorf("%w: %s is a shared (CGNAT) address", ErrRefused, ip)
	}
	return nil
}

// refused is the refusal of a destination, one text whatever the cause:
// it says nothing about what the name resolves to or why the address is
// refused, which would let a tenant map the internal network through
// registration errors and delivery logs.
func refused(host string) error {
	return fmt.Errorf("%w: ticketd does not connect to %s", ErrRefused, host)
}

// Allowed reports whether host (a name or an address, without port) is one
// of g.Hosts; every host is when Hosts is nil.
func (g Guard) Allowed(host string) bool {
	if g.Hosts == nil {
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	for _, h := range g.Hosts {
		h = strings.ToLower(h)
		if parent, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+parent) {
				return true
			}
		} else if host == strings.Trim(h, "[]") {
			return true
		}
	}
	return false
}

// Check refuses u unless its scheme is https (or http with AllowPrivate),
// it names a host of Hosts without user info or fragment, and a host that
// is an address is allowed. It resolves nothing: CheckURL does, and every
// dial does again.
func (g Guard) Check(u *url.URL) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowPrivate:
	case u.Scheme == "http":
		return fmt.Errorf("%w: the URL must use https", ErrRefused)
	default:
		return fmt.Errorf("%w: the URL must be https://host/…, got scheme %q", ErrRefused, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: the URL must not carry credentials", ErrRefused)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: the URL has no host", ErrRefused)
	}
	if u.Fragment != "" {
		return fmt.Errorf("%w: the URL must not have a fragment", ErrRefused)
	}
	if !g.Allowed(host) {
		return fmt.Errorf("%w: %s is not one of the hosts this server may reach", ErrRefused, host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if g.ForScheme(u.Scheme).CheckAddr(ip) != nil {
			return refused(host)
		}
	} else if numeric(host) {
		return refused(host)
	}
	return nil
}

// numeric reports whether host ends in an all-digit (or 0x) label: not a
// DNS name, but an address some resolvers read in a legacy form
// (2130706433, 0x7f.1, 127.1 are 127.0.0.1).
func numeric(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := strings.ToLower(host[strings.LastIndex(host, ".")+1:])
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// CheckURL parses raw and checks it (Check), and refuses a name that
// resolves to any refused address. A name that does not resolve (yet) is
// accepted: it is judged when it is dialled, and a registration error that
// told it from a refused one would let a tenant probe the internal DNS.
func (g Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: not a URL", ErrRefused)
	}
	if err := g.Check(u); err != nil {
		return nil, err
	}
	if _, err := g.ForScheme(u.Scheme).resolve(ctx, u.Hostname()); errors.Is(err, ErrRefused) {
		return nil, err
	}
	return u, nil
}

// resolve returns host's addresses, refusing the host if any of them is
// refused: a name with one public and one private address could be
// steered to the private one.
func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if g.CheckAddr(ip) != nil {
			return nil, refused(host)
		}
		return []netip.Addr{ip}, nil
	}
	if numeric(host) {
		return nil, refused(host)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		// Not the resolver's own text: it names the DNS server ticketd uses.
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, fmt.Errorf("resolve %s: no such host", host)
		}
		return nil, fmt.Errorf("resolve %s: lookup failed", host)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	for _, a := range addrs {
		if g.CheckAddr(a) != nil {
			return nil, refused(host)
		}
	}
	return addrs, nil
}

// DialContext resolves addr's host with g's resolver, checks the host
// against Hosts and every address, and dials them in turn; the dialer's
// Control hook checks the socket's actual destination once more, so no path
// through name resolution reaches a refused address. It fits
// http.Transport.DialContext.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if !g.Allowed(host) {
		return nil, fmt.Errorf("%w: %s is not one of the hosts this server may reach", ErrRefused, host)
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	var firstErr error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, ErrRefused) {
			// The dial error names the address dialled: say only "refused".
			return nil, refused(host)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// control runs after the socket is created and before it connects.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable destination %q", ErrRefused, address)
	}
	return g.CheckAddr(ap.Addr())
}
