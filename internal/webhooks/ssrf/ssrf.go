// Package ssrf keeps webhook requests away from addresses a tenant must not
// reach through ticketd: the host's own services, the private network and the
// cloud metadata endpoint. A URL is checked when it is registered and every
// connection is checked again at dial time against the address actually
// dialled, because a name that resolved to a public address yesterday may
// resolve to 10.0.0.5 today.
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
var ErrRefused = errors.New("webhook destination refused")

// Resolver turns a host name into addresses; *net.Resolver satisfies it and
// tests substitute a fixed table.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard applies the policy. The zero value is the production policy (https
// only, public addresses only) with the system resolver.
type Guard struct {
	// AllowPrivate admits http:// URLs and loopback, private (RFC 1918, ULA)
	// and shared (CGNAT) addresses: for a developer's machine or a deployment
	// whose receivers live on the same private network. Link-local,
	// metadata, multicast and unspecified addresses stay refused even then.
	AllowPrivate bool
	// Resolver resolves names at registration and at dial time; nil means
	// net.DefaultResolver.
	Resolver Resolver
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
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("100::/64"),
	}
)

// CheckAddr reports whether ip may be dialled under g's policy.
func (g Guard) CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
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
	if g.AllowPrivate {
		return nil
	}
	switch {
	case ip.IsLoopback():
		return fmt.Errorf("%w: %s is loopback (allowed only in dev or with private destinations allowed)", ErrRefused, ip)
	case ip.IsPrivate():
		return fmt.Errorf("%w: %s is a private address", ErrRefused, ip)
	case cgnat.Contains(ip):
		return fmt.Errorf("%w: %s is a shared (CGNAT) address", ErrRefused, ip)
	}
	return nil
}

// CheckURL parses raw and refuses it unless its scheme is https (or http
// with AllowPrivate), it names a host without user info, and every address
// the host resolves to is allowed. It returns the parsed URL.
func (g Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowPrivate:
	case u.Scheme == "http":
		return nil, fmt.Errorf("%w: the URL must use https", ErrRefused)
	default:
		return nil, fmt.Errorf("%w: the URL must be https://host/…, got scheme %q", ErrRefused, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: the URL must not carry credentials", ErrRefused)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: the URL has no host", ErrRefused)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("%w: the URL must not have a fragment", ErrRefused)
	}
	if _, err := g.resolve(ctx, u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// resolve returns host's addresses, refusing the host if any of them is
// refused: a name with one public and one private address could be
// steered to the private one.
func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}, g.CheckAddr(ip)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			return nil, fmt.Errorf("%s resolves to a refused address: %w", host, err)
		}
	}
	return addrs, nil
}

// DialContext resolves addr's host with g's resolver, checks every address,
// and dials them in turn; the dialer's Control hook checks the socket's
// actual destination once more, so no path through name resolution reaches
// a refused address. It fits http.Transport.DialContext.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
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
