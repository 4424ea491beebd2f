package upstreamauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/caddy-a2a/caddy-a2a/internal/oauthtest"
	"github.com/caddy-a2a/caddy-a2a/keys"
	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
)

func mustKey(t *testing.T, key crypto.Signer, err error) crypto.Signer {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func rsaKey(t *testing.T, bits int) crypto.Signer {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	return mustKey(t, k, err)
}

func ecKey(t *testing.T, curve elliptic.Curve) crypto.Signer {
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	return mustKey(t, k, err)
}

func edKey(t *testing.T) crypto.Signer {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	return mustKey(t, k, err)
}

// Each fetch signs a new assertion, which the endpoint verifies with the
// client's public key: the client's id as iss and sub, the token URL as
// aud, a lifetime of AssertionLifetime, and a jti it has not seen (it
// refuses a replay, as providers do). For both grants, every kind of key.
func TestPrivateKeyJWT(t *testing.T) {
	for _, tc := range []struct {
		name, alg, wantAlg string
		key                crypto.Signer
	}{
		{"RSA", "", "RS256", rsaKey(t, 2048)},
		{"RSA-PSS", "PS256", "PS256", rsaKey(t, 2048)},
		{"EC P-256", "", "ES256", ecKey(t, elliptic.P256())},
		{"EC P-384", "", "ES384", ecKey(t, elliptic.P384())},
		{"Ed25519", "", "EdDSA", edKey(t)},
	} {
		for _, grant := range []string{upstreamauth.GrantClientCredentials, upstreamauth.GrantTokenExchange} {
			t.Run(tc.name+" "+grant, func(t *testing.T) {
				// Tokens no longer-lived than the margin: each Token fetches.
				p := oauthtest.NewWithKey(t, clientID, tc.key.Public(), int64(upstreamauth.RefreshMargin/time.Second))
				c, err := upstreamauth.New(upstreamauth.Config{Grant: grant, TokenURL: p.URL, ClientID: clientID,
					ClientAuth: upstreamauth.PrivateKeyJWT, PrivateKey: tc.key, SigningAlg: tc.alg, KeyID: "key-1"})
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range []string{"tok-1", "tok-2"} {
					if grant == upstreamauth.GrantTokenExchange {
						want += "-for-alice"
					}
					if tok, err := c.Token(context.Background(), upstreamauth.Subject{Token: "alice"}); err != nil || tok != want {
						t.Fatalf("fetch %d: %q, %v; want %s", i+1, tok, err, want)
					}
				}
				form := p.Form(0)
				if form.Get("client_id") != clientID || form.Has("client_secret") ||
					form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
					t.Errorf("the form sent %v", form)
				}
				header, first, second := p.AssertionOf(0).Header, p.AssertionOf(0).Claims, p.AssertionOf(1).Claims
				if header.Algorithm != tc.wantAlg || header.KeyID != "key-1" || header.ExtraHeaders["typ"] != "JWT" {
					t.Errorf("header alg %s, kid %q, typ %v; want %s, key-1, JWT", header.Algorithm, header.KeyID, header.ExtraHeaders["typ"], tc.wantAlg)
				}
				if first.Issuer != clientID || first.Subject != clientID || len(first.Audience) != 1 || first.Audience[0] != p.URL ||
					first.Expiry.Time().Sub(first.IssuedAt.Time()) != upstreamauth.AssertionLifetime {
					t.Errorf("claims %+v", first)
				}
				if first.ID == "" || first.ID == second.ID {
					t.Errorf("jti %q, then %q: want a fresh one each fetch", first.ID, second.ID)
				}
				resp, err := http.PostForm(p.URL, form)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("the first assertion sent again: HTTP %d, want the endpoint's 401 to a replay", resp.StatusCode)
				}
			})
		}
	}
}

// With the key's certificate, the assertion names it by its SHA-1 and
// SHA-256 thumbprints, as Microsoft Entra ID wants.
func TestPrivateKeyJWTCertificate(t *testing.T) {
	key := rsaKey(t, 2048)
	cert, _ := oauthtest.SelfSigned(t, key)
	p := oauthtest.NewWithKey(t, clientID, key.Public(), 3600)
	c, err := upstreamauth.New(upstreamauth.Config{Grant: upstreamauth.GrantClientCredentials, TokenURL: p.URL,
		ClientID: clientID, ClientAuth: upstreamauth.PrivateKeyJWT, PrivateKey: key, Certificate: cert})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Token(context.Background(), upstreamauth.Subject{}); err != nil {
		t.Fatal(err)
	}
	sha1Sum, sha256Sum := sha1.Sum(cert.Raw), sha256.Sum256(cert.Raw)
	header := p.AssertionOf(0).Header
	for name, want := range map[string]string{"x5t": base64.RawURLEncoding.EncodeToString(sha1Sum[:]),
		"x5t#S256": base64.RawURLEncoding.EncodeToString(sha256Sum[:])} {
		if got := header.ExtraHeaders[jose.HeaderKey(name)]; got != want {
			t.Errorf("%s = %v, want %s", name, got, want)
		}
	}
}

// An assertion signed with a key the endpoint does not know is refused:
// the error names the token URL and why, and shows neither the key nor
// the assertion the endpoint echoes.
func TestPrivateKeyJWTWrongKey(t *testing.T) {
	p := oauthtest.NewWithKey(t, clientID, ecKey(t, elliptic.P256()).Public(), 3600)
	wrong := ecKey(t, elliptic.P256())
	c, err := upstreamauth.New(upstreamauth.Config{Grant: upstreamauth.GrantClientCredentials, TokenURL: p.URL,
		ClientID: clientID, ClientAuth: upstreamauth.PrivateKeyJWT, PrivateKey: wrong})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Token(context.Background(), upstreamauth.Subject{})
	var te *upstreamauth.Error
	want := "could not get a token for the service from " + p.URL + ": it answered HTTP 401 (invalid_client: bad assertion ***: its signature is not the client's"
	if !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant one holding %q", err, want)
	}
	pemBody := strings.Split(oauthtest.KeyPEM(t, wrong), "\n")[1]
	if strings.Contains(err.Error(), pemBody) || strings.Contains(err.Error(), "eyJ") {
		t.Fatalf("the error shows the key or the assertion: %v", err)
	}
}

func TestPrivateKeyJWTConfigChecks(t *testing.T) {
	rsa2048, ec := rsaKey(t, 2048), ecKey(t, elliptic.P256())
	base := func(mod func(*upstreamauth.Config)) upstreamauth.Config {
		c := upstreamauth.Config{Grant: upstreamauth.GrantClientCredentials, TokenURL: "https://idp.example.com/token",
			ClientID: clientID, ClientAuth: upstreamauth.PrivateKeyJWT, PrivateKey: rsa2048}
		mod(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  upstreamauth.Config
		want string
	}{
		{"no key", base(func(c *upstreamauth.Config) { c.PrivateKey = nil }),
			"client_auth private_key_jwt needs the private key that signs its assertions"},
		{"a secret too", base(func(c *upstreamauth.Config) { c.ClientSecret = secret }),
			"client_secret: is not sent with client_auth private_key_jwt: give the private key alone"},
		{"RSA 1024", base(func(c *upstreamauth.Config) { c.PrivateKey = rsaKey(t, 1024) }),
			"private_key: unsupported key: RSA key of 1024 bits; want 2048 bits or more"},
		{"an unknown alg", base(func(c *upstreamauth.Config) { c.SigningAlg = "HS256" }),
			`signing_alg: algorithm "HS256" is not supported`},
		{"an alg not the key's", base(func(c *upstreamauth.Config) { c.PrivateKey, c.SigningAlg = ec, "RS256" }),
			"signing_alg: algorithm RS256 does not match the key (ECDSA P-256)"},
		{"a certificate not the key's", base(func(c *upstreamauth.Config) { c.Certificate, _ = oauthtest.SelfSigned(t, ec) }),
			"certificate: is not the private key's: its public key is another"},
		{"a key with a secret's client_auth", base(func(c *upstreamauth.Config) { c.ClientAuth, c.ClientSecret = upstreamauth.ClientSecretPost, secret }),
			"a private key, a certificate, signing_alg and key_id are for client_auth private_key_jwt, which sends no client_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			if _, err := upstreamauth.New(tc.cfg); err == nil {
				t.Fatal("New took it")
			}
		})
	}
}

// ParsePrivateKey takes the PEM forms a key comes in, and refuses a
// public key, which cannot sign, never quoting what it was given.
func TestParsePrivateKey(t *testing.T) {
	ec := ecKey(t, elliptic.P256())
	if k, err := upstreamauth.ParsePrivateKey([]byte(oauthtest.KeyPEM(t, ec))); err != nil || !keys.Equal(k.Public(), ec.Public()) {
		t.Fatalf("PKCS #8: %v", err)
	}
	for _, bad := range []struct{ pem, want string }{
		{"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEVs/o5+uQbTjL3chynL4wXgUg2R9\nq9UU8I5mEovUf86QZ7kOBIjJwqnzD1omageEHWwHdBO6B+dFabmdT9POxg==\n-----END PUBLIC KEY-----\n",
			"it holds a public key; the client signs with its private key"},
		{"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", `PEM block "PRIVATE KEY"`},
		{"not a key at all", "no PEM key found"},
	} {
		_, err := upstreamauth.ParsePrivateKey([]byte(bad.pem))
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "bm90IGEga2V5") || strings.Contains(err.Error(), "MFkw") {
			t.Errorf("%v, want one holding %q and not the key", err, bad.want)
		}
	}
}
