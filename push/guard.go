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

// special are the ranges refused besides what netip's predicates name
// (loopback, private, link-local, multicast, unspecified): shared address
// space, "this network", IETF protocol assignments, benchmarking,
// reserved and broadcast, and the translation prefixes through which an
// IPv6 address can reach an IPv4 one.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
}

// errRefused marks an address or URL the guard refuses.
var errRefused = errors.New("push: receiver refused")

// addressProblem says why the agent may not connect to ip, or "" when it
// may.
func (g *guard) addressProblem(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, p := range g.allowed {
		if p.Contains(ip) {
			return ""
		}
	}
	if g.allowPrivate {
		return ""
	}
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address (where cloud metadata services live)"
	case ip.IsMulticast():
		return "a multicast address"
	case ip.IsUnspecified():
		return "an unspecified address"
	}
	for _, p := range special {
		if p.Contains(ip) {
			return "a reserved or special-purpose address"
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

// Origin is the origin of an absolute URL as the allowlist compares it:
// scheme://host[:port], lowercase, the scheme's default port left out.
func Origin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute URL", raw)
	}
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
	return scheme + "://" + host, nil
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
	case u.Scheme == "http":
		return fmt.Errorf("%w: the URL must use https", errRefused)
	default:
		return fmt.Errorf("%w: the URL must be an https URL", errRefused)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: the URL has no host", errRefused)
	}
	if u.User != nil {
		return fmt.Errorf("%w: the URL must not carry credentials (use authentication)", errRefused)
	}
	if len(g.origins) > 0 {
		if origin, _ := Origin(raw); !g.origins[origin] {
			return fmt.Errorf("%w: the URL's origin is not one this agent notifies", errRefused)
		}
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if problem := g.addressProblem(ip); problem != "" {
			return fmt.Errorf("%w: the host is %s", errRefused, problem)
		}
		return nil
	}
	if !g.allowPrivate && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
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
