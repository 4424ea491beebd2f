package authn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// testCA issues certificates, all made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

var serial int64 = 1

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key))
	cert := must(x509.ParseCertificate(der))
	return &testCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

type certOpts struct {
	cn       string
	uri      string
	dns      string
	eku      x509.ExtKeyUsage
	notAfter time.Time
}

func (ca *testCA) issue(t *testing.T, o certOpts) tls.Certificate {
	t.Helper()
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: o.cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: o.notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{o.eku},
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(time.Hour)
	}
	if o.eku == x509.ExtKeyUsageAny {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if o.uri != "" {
		tmpl.URIs = []*url.URL{must(url.Parse(o.uri))}
	}
	if o.dns != "" {
		tmpl.DNSNames = []string{o.dns}
	}
	if o.cn == "127.0.0.1" {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key))
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: must(x509.ParseCertificate(der))}
}

func certPEM(c tls.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}))
}

func mtlsAuth(t *testing.T, cfg *authn.MTLSConfig) *authn.Authenticator {
	t.Helper()
	return newAuth(t, authn.Config{Schemes: map[string]*authn.Scheme{"mtls": {Type: "mutualTLS", MTLS: cfg}}}, authn.Options{})
}

// tlsServer is a real TLS listener on loopback whose handler answers
// "<status> <subject>" for what the authenticator decided.
func tlsServer(t *testing.T, a *authn.Authenticator, serverCA *testCA, mode tls.ClientAuthType, clientCAs *x509.CertPool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, f := a.Authenticate(r)
		if f != nil {
			w.WriteHeader(f.Status)
			return
		}
		fmt.Fprint(w, id.Subject)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serverCA.issue(t, certOpts{cn: "127.0.0.1", eku: x509.ExtKeyUsageServerAuth})},
		ClientAuth:   mode,
		ClientCAs:    clientCAs,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// call connects with the client certificate (none when cert is nil).
func call(t *testing.T, srv *httptest.Server, serverCA *testCA, cert *tls.Certificate) (int, string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestMutualTLS(t *testing.T) {
	serverCA, clientCA, otherCA := newCA(t, "server CA"), newCA(t, "client CA"), newCA(t, "untrusted CA")
	good := clientCA.issue(t, certOpts{cn: "agent-7", uri: "spiffe://example.org/agent", dns: "agent.example.org"})
	untrusted := otherCA.issue(t, certOpts{cn: "agent-7", uri: "spiffe://example.org/agent"})
	expired := clientCA.issue(t, certOpts{cn: "old", uri: "spiffe://example.org/old", notAfter: time.Now().Add(-time.Minute)})
	serverOnly := clientCA.issue(t, certOpts{cn: "server", dns: "server.example.org", eku: x509.ExtKeyUsageServerAuth})

	t.Run("trusted CAs in authn, TLS server does not verify", func(t *testing.T) {
		a := mtlsAuth(t, &authn.MTLSConfig{TrustedCAs: []string{clientCA.pem}})
		srv := tlsServer(t, a, serverCA, tls.RequestClientCert, nil)
		for _, tt := range []struct {
			name   string
			cert   *tls.Certificate
			status int
			body   string
		}{
			{"trusted", &good, http.StatusOK, "spiffe://example.org/agent"},
			{"untrusted CA", &untrusted, http.StatusUnauthorized, ""},
			{"expired", &expired, http.StatusUnauthorized, ""},
			{"not for client auth", &serverOnly, http.StatusUnauthorized, ""},
			{"no certificate", nil, http.StatusUnauthorized, ""},
		} {
			if status, body := call(t, srv, serverCA, tt.cert); status != tt.status || body != tt.body {
				t.Errorf("%s: %d %q; want %d %q", tt.name, status, body, tt.status, tt.body)
			}
		}
	})
	t.Run("TLS server verifies", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA.cert)
		a := mtlsAuth(t, nil)
		srv := tlsServer(t, a, serverCA, tls.VerifyClientCertIfGiven, pool)
		if status, body := call(t, srv, serverCA, &good); status != http.StatusOK || body != "spiffe://example.org/agent" {
			t.Errorf("trusted: %d %q", status, body)
		}
		if status, _ := call(t, srv, serverCA, &untrusted); status == http.StatusOK {
			t.Error("a certificate of an untrusted CA passed the TLS server")
		}
		if status, _ := call(t, srv, serverCA, nil); status != http.StatusUnauthorized {
			t.Errorf("no certificate: %d", status)
		}
	})
	t.Run("nobody verifies", func(t *testing.T) {
		a := mtlsAuth(t, nil)
		srv := tlsServer(t, a, serverCA, tls.RequestClientCert, nil)
		if status, _ := call(t, srv, serverCA, &good); status != http.StatusUnauthorized {
			t.Errorf("an unverified certificate: %d; want 401", status)
		}
	})
	t.Run("subject from cn", func(t *testing.T) {
		a := mtlsAuth(t, &authn.MTLSConfig{TrustedCAs: []string{clientCA.pem}, SubjectFrom: []string{"cn"}})
		srv := tlsServer(t, a, serverCA, tls.RequestClientCert, nil)
		if status, body := call(t, srv, serverCA, &good); status != http.StatusOK || body != "agent-7" {
			t.Errorf("%d %q; want the CN", status, body)
		}
	})
}

func TestMutualTLSIdentity(t *testing.T) {
	clientCA := newCA(t, "client CA")
	good := clientCA.issue(t, certOpts{cn: "agent-7", uri: "spiffe://example.org/agent", dns: "agent.example.org"})
	a := mtlsAuth(t, &authn.MTLSConfig{TrustedCAs: []string{clientCA.pem}})
	r := request()
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{good.Leaf}}
	id, f := a.Authenticate(r)
	if f != nil {
		t.Fatal(f)
	}
	if id.Type != a2a.SchemeMutualTLS || id.Owner() != "mtls:spiffe://example.org/agent" || id.Claims["cn"] != "agent-7" ||
		!id.Expires.Equal(good.Leaf.NotAfter) || len(id.Claims["sha256"].(string)) != 64 {
		t.Errorf("identity %+v", id)
	}
}

func TestMutualTLSFromProxy(t *testing.T) {
	clientCA, otherCA := newCA(t, "client CA"), newCA(t, "untrusted CA")
	good := clientCA.issue(t, certOpts{cn: "agent-7", uri: "spiffe://example.org/agent"})
	untrusted := otherCA.issue(t, certOpts{cn: "agent-7", uri: "spiffe://example.org/agent"})
	proxyCert := clientCA.issue(t, certOpts{cn: "proxy", uri: "spiffe://example.org/proxy"})
	escaped := url.PathEscape(certPEM(good))
	der := base64.StdEncoding.EncodeToString(good.Certificate[0])
	xfcc := `By=spiffe://example.org/proxy;Hash=abc;Cert="` + escaped + `";URI=spiffe://example.org/agent`

	for _, withCAs := range []bool{true, false} {
		cfg := &authn.MTLSConfig{TrustedProxies: []string{"10.0.0.0/8", "2001:db8::1"}, CertHeader: "X-Client-Cert"}
		if withCAs {
			cfg.TrustedCAs = []string{clientCA.pem}
		}
		a := mtlsAuth(t, cfg)
		for _, tt := range []struct {
			name, remote, header string
			ok                   bool
		}{
			{"URL-encoded PEM", "10.1.2.3:4567", escaped, true},
			{"base64 DER", "10.1.2.3:4567", der, true},
			{"Envoy XFCC", "10.1.2.3:4567", xfcc, true},
			{"IPv6 proxy", "[2001:db8::1]:443", escaped, true},
			{"IPv4-mapped proxy address", "[::ffff:10.9.9.9]:443", escaped, true},
			{"untrusted peer", "192.0.2.10:4567", escaped, false},
			{"garbage", "10.1.2.3:4567", "not a certificate", false},
			{"oversized", "10.1.2.3:4567", strings.Repeat("A", 20<<10), false},
			{"untrusted CA", "10.1.2.3:4567", url.PathEscape(certPEM(untrusted)), !withCAs},
		} {
			r := request("X-Client-Cert", tt.header)
			r.RemoteAddr = tt.remote
			if tt.name != "untrusted peer" {
				// The proxy's own certificate on the connection never
				// counts for the client.
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{proxyCert.Leaf}, VerifiedChains: [][]*x509.Certificate{{proxyCert.Leaf}}}
			}
			id, f := a.Authenticate(r)
			if tt.ok != (f == nil) {
				t.Errorf("trusted CAs %v, %s: %+v %+v", withCAs, tt.name, id, f)
				continue
			}
			if tt.ok && id.Subject != "spiffe://example.org/agent" {
				t.Errorf("%s: subject %q", tt.name, id.Subject)
			}
		}
		// A trusted proxy that sends no certificate header: no client
		// certificate, whatever the proxy's own TLS certificate.
		r := request()
		r.RemoteAddr = "10.1.2.3:4567"
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{proxyCert.Leaf}, VerifiedChains: [][]*x509.Certificate{{proxyCert.Leaf}}}
		if id, f := a.Authenticate(r); f == nil {
			t.Errorf("the proxy's TLS certificate was taken for the client: %+v", id)
		}
	}
}
