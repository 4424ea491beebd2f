package push

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// The SSRF guard. A receiver URL is whatever a client wrote, so the agent
// must not become a way into its own network: by default only https URLs
// are taken, and every address the dialer is about to connect to, after
// DNS resolution, must be public. The check runs in the dialer's Control
// hook, on the very address of each connection attempt, so a name that
// resolves to a public address when the config is created and to a private
// one later (DNS rebinding) is still refused. Proxies from the environment
// are not used and redirects are not followed.

// nonPublic are the addresses a receiver may not have unless the operator
// allows them. They are every range of the IANA IPv4 and IPv6
// Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry) that is not
// globally reachable or not forwardable, and besides those: multicast,
// whose receivers are not one host; and what reaches IPv4 through IPv6
// (NAT64, 6to4, Teredo, IPv4-compatible, IPv4-translated), which could
// reach a private IPv4 address. The globally reachable anycast and
// identifier blocks inside 192.0.0.0/24 and 2001::/23 (PCP, TURN, DNS-SD,
// AMT, AS112, ORCHIDv2, drone remote ID) are refused with their block: no
// webhook lives there.
// IPv4-mapped IPv6 addresses are checked as the IPv4 address they are.
// The first range that holds an address names it.
var nonPublic = []struct {
	prefix netip.Prefix
	what   string
}{
	// IPv4 registry.
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (where cloud metadata services live)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "the deprecated 6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	// IPv6 registry.
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated address (RFC 2765)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "a dummy address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol assignment (Teredo, benchmarking, ORCHID…)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("5f00::/16"), "a segment routing (SRv6) identifier"},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local (private) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

var ipv4Loopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// errRefused marks an address or URL the guard refuses.
var errRefused = errors.New("push: receiver refused")

// addressProblem says why the agent may not connect to ip, or "" when it
// may.
func (g *guard) addressProblem(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("") // a zoned address matches no prefix
	for _, p := range g.allowed {
		if p.Contains(ip) {
			return ""
		}
	}
	if g.allowPrivate {
		return ""
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	return ""
}

// guard is the policy a Sender applies to receiver URLs and addresses.
type guard struct {
	allowInsecure bool
	allowPrivate  bool
	allowed       []netip.Prefix
	// origins, when not empty, are the only origins notified.
	origins map[string]bool
}

// AllowedOrigin is the origin an entry of Options.AllowedOrigins names, as
// the allowlist compares it. An entry is an http or https origin alone,
// scheme://host[:port] (a trailing "/" is taken): receivers are allowed by
// origin only, so a path, query or user in an entry would be silently
// ignored, and is refused instead. A path prefix is not offered: whether
// two paths are the same is the receiver's to say (escapes, dot segments,
// case), so it would confine less than it seems to.
func AllowedOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return "", fmt.Errorf("%q is not an absolute URL: an origin is scheme://host[:port]", raw)
	case u.Scheme != "https" && u.Scheme != "http":
		return "", fmt.Errorf("%q is not an http or https origin", raw)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%q is not an origin alone: receivers are allowed by scheme, host and port; "+
			"a user, path or query cannot be allowed", raw)
	}
	return originOf(u), nil
}

// originOf is u's origin as the allowlist compares it: scheme://host[:port],
// lowercase, the scheme's default port left out.
func originOf(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// checkURL says why raw cannot be a receiver URL, as far as can be known
// without resolving its host.
func (g *guard) checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: not a URL", errRefused)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.allowInsecure:
	case g.allowInsecure:
		return fmt.Errorf("%w: the URL must be an http or https URL", errRefused)
	default:
		return fmt.Errorf("%w: the URL must be an https URL (or http, which the agent's push option allow_insecure permits)", errRefused)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: the URL has no host", errRefused)
	}
	if u.User != nil {
		return fmt.Errorf("%w: the URL must not carry credentials (use authentication)", errRefused)
	}
	if len(g.origins) > 0 && !g.origins[originOf(u)] {
		return fmt.Errorf("%w: the URL's origin is not one this agent notifies", errRefused)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if problem := g.addressProblem(ip); problem != "" {
			return fmt.Errorf("%w: the host is %s", errRefused, problem)
		}
		return nil
	}
	// A localhost name resolves to loopback addresses (RFC 6761 §6.3): it is
	// taken where one of them would be.
	if (host == "localhost" || strings.HasSuffix(host, ".localhost")) &&
		g.addressProblem(netip.IPv6Loopback()) != "" && g.addressProblem(ipv4Loopback) != "" {
		return fmt.Errorf("%w: the host is a loopback name", errRefused)
	}
	return nil
}

// dialControl refuses, at each connection attempt, an address the guard
// does not allow.
func (g *guard) dialControl(_ context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the address %q", errRefused, address)
	}
	if problem := g.addressProblem(ap.Addr()); problem != "" {
		return fmt.Errorf("%w: %s resolves to %s", errRefused, ap.Addr(), problem)
	}
	if network != "tcp4" && network != "tcp6" && network != "tcp" {
		return fmt.Errorf("%w: network %s", errRefused, network)
	}
	return nil
}

// dialer returns the dialer every delivery goes through.
func (g *guard) dialer() *net.Dialer {
	return &net.Dialer{ControlContext: g.dialControl}
}
