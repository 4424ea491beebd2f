package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// mutualTLSKind takes the caller from a client certificate.
func init() { registerKind(&mutualTLSKind) }

var mutualTLSKind = kind{typ: TypeMutualTLS, card: a2a.SchemeMutualTLS, priority: priorityMTLS,
	validate: func(s *Scheme) []error {
		if s.MTLS == nil {
			return nil
		}
		return s.MTLS.validate()
	},
	build: (*builder).mtls}

var subjectSources = []string{"uri", "dns", "email", "cn", "dn"}

func (m *MTLSConfig) validate() []error {
	var errs []error
	if (len(m.TrustedProxies) > 0) != (m.CertHeader != "") {
		errs = append(errs, errors.New("mtls: trusted_proxies and cert_header go together"))
	}
	for i, p := range m.TrustedProxies {
		if _, err := parsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("mtls.trusted_proxies[%d]: %w", i, err))
		}
	}
	for _, s := range m.SubjectFrom {
		if !slices.Contains(subjectSources, s) {
			errs = append(errs, fmt.Errorf("mtls.subject_from: %q is not one of %s", s, strings.Join(subjectSources, ", ")))
		}
	}
	return errs
}

// parsePrefix reads a CIDR or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

var defaultSubjectFrom = []string{"uri", "dns", "email", "cn"}

// mtls takes the caller from a client certificate: the one of the TLS
// connection or, only from a configured trusted proxy, the one in
// CertHeader. A certificate is accepted when it chains to TrustedCAs or,
// without them, when the TLS server verified it (or the trusted proxy
// passed it on).
func (b *builder) mtls(s *scheme, sc *Scheme) error {
	// Not a registered scheme: the handshake is the real challenge, but a
	// 401 must name at least one (RFC 9110 §11.6.1).
	s.challenge = "MutualTLS realm=" + quote(b.a.realm)
	cfg := sc.MTLS
	if cfg == nil {
		cfg = &MTLSConfig{}
	}
	var roots *x509.CertPool
	for i, src := range cfg.TrustedCAs {
		field := fmt.Sprintf("mtls.trusted_cas[%d]", i)
		pemBytes, err := b.env.pemSource(field, src)
		if err != nil {
			return err
		}
		certs, err := parsePEMCertificates(pemBytes)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if roots == nil {
			roots = x509.NewCertPool()
		}
		for _, c := range certs {
			roots.AddCert(c)
		}
	}
	var proxies []netip.Prefix
	for _, p := range cfg.TrustedProxies {
		prefix, err := parsePrefix(p)
		if err != nil {
			return fmt.Errorf("mtls.trusted_proxies: %w", err)
		}
		proxies = append(proxies, prefix)
	}
	header := http.CanonicalHeaderKey(cfg.CertHeader)
	from := cfg.SubjectFrom
	if len(from) == 0 {
		from = defaultSubjectFrom
	}
	s.checkScopes = func(scopes []string) error {
		if len(scopes) > 0 {
			return errors.New("mutualTLS grants no scopes")
		}
		return nil
	}

	a := b.a
	s.check = func(r *http.Request) outcome {
		var certs []*x509.Certificate
		verified := false
		switch {
		case header != "" && fromProxy(r.RemoteAddr, proxies):
			// Behind a trusted proxy, the TLS peer is the proxy: only the
			// header speaks for the client.
			vals := r.Header[header]
			if len(vals) == 0 {
				return outcome{}
			}
			if len(vals) > 1 || len(vals[0]) > MaxCertHeaderBytes {
				return refused("malformed client certificate header", "more than one certificate header, or one over the limit")
			}
			var err error
			if certs, err = parseCertHeader(vals[0]); err != nil {
				return refused("malformed client certificate header", "certificate header: "+err.Error())
			}
			verified = true // by the trusted proxy
		case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
			certs, verified = r.TLS.PeerCertificates, len(r.TLS.VerifiedChains) > 0
		case header != "" && len(r.Header[header]) > 0:
			return refused("client certificate header not accepted", "certificate header from an address that is not a trusted proxy")
		default:
			return outcome{}
		}
		if roots == nil && !verified {
			return refused("client certificate not verified",
				"the TLS server did not verify the client certificate and no trusted CAs are configured")
		}
		leaf, now := certs[0], a.now()
		if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
			return refused("client certificate expired or not yet valid", "client certificate outside its validity period")
		}
		key := cacheKey(s.index, leaf.Raw)
		if id := a.cache.get(key, now); id != nil {
			return accepted(id)
		}
		if roots != nil {
			inter := x509.NewCertPool()
			for _, c := range certs[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{
				Roots: roots, Intermediates: inter, CurrentTime: now,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}); err != nil {
				return refused("client certificate not trusted", "client certificate: "+err.Error())
			}
		}
		c := certCredential(leaf, from)
		if c.Subject == "" {
			return refused("client certificate names no subject", "no "+strings.Join(from, ", ")+" in the client certificate")
		}
		c.Scheme = s.name
		id := single(c)
		a.cache.put(key, s.index, id, leaf.NotAfter, now)
		return accepted(id)
	}
	return nil
}

// fromProxy reports whether the direct peer is a trusted proxy.
func fromProxy(remoteAddr string, proxies []netip.Prefix) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	return slices.ContainsFunc(proxies, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// certCredential names the caller after the first of from the leaf has.
func certCredential(leaf *x509.Certificate, from []string) *Credential {
	uris := make([]string, len(leaf.URIs))
	for i, u := range leaf.URIs {
		uris[i] = u.String()
	}
	fp := sha256.Sum256(leaf.Raw)
	c := &Credential{
		Type: a2a.SchemeMutualTLS,
		Claims: map[string]any{
			"subject":   leaf.Subject.String(),
			"issuer":    leaf.Issuer.String(),
			"serial":    leaf.SerialNumber.Text(16),
			"cn":        leaf.Subject.CommonName,
			"dns":       slices.Clone(leaf.DNSNames),
			"uri":       uris,
			"email":     slices.Clone(leaf.EmailAddresses),
			"sha256":    hex.EncodeToString(fp[:]),
			"not_after": leaf.NotAfter.Unix(),
		},
		Expires: leaf.NotAfter,
	}
	for _, f := range from {
		switch {
		case f == "uri" && len(uris) > 0:
			c.Subject = uris[0]
		case f == "dns" && len(leaf.DNSNames) > 0:
			c.Subject = leaf.DNSNames[0]
		case f == "email" && len(leaf.EmailAddresses) > 0:
			c.Subject = leaf.EmailAddresses[0]
		case f == "cn" && leaf.Subject.CommonName != "":
			c.Subject = leaf.Subject.CommonName
		case f == "dn":
			c.Subject = leaf.Subject.String()
		}
		if c.Subject != "" {
			break
		}
	}
	return c
}

// parseCertHeader reads a client certificate (and any chain after it) as
// proxies pass it on: Envoy's X-Forwarded-Client-Cert (Cert="..."),
// URL-encoded PEM (nginx, AWS ALB) or base64 DER, comma-separated for a
// chain (Traefik).
func parseCertHeader(v string) ([]*x509.Certificate, error) {
	v = strings.TrimSpace(v)
	if i := strings.Index(v, "Cert="); i >= 0 {
		v = v[i+len("Cert="):]
		if rest, found := strings.CutPrefix(v, `"`); found {
			end := strings.IndexByte(rest, '"')
			if end < 0 {
				return nil, errors.New("unterminated Cert value")
			}
			v = rest[:end]
		} else if end := strings.IndexAny(v, ";,"); end >= 0 {
			v = v[:end]
		}
	}
	unescaped, err := url.PathUnescape(v)
	if err != nil {
		return nil, errors.New("bad URL encoding")
	}
	if strings.Contains(unescaped, "-----BEGIN") {
		return parsePEMCertificates([]byte(unescaped))
	}
	var certs []*x509.Certificate
	for part := range strings.SplitSeq(unescaped, ",") {
		der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(part), ""))
		if err != nil {
			return nil, errors.New("neither PEM nor base64 DER")
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, errors.New("not a certificate")
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// parsePEMCertificates reads every CERTIFICATE block in b.
func parsePEMCertificates(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, errors.New("not a certificate")
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}
