package keys

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// pemKind is a PEM block type that holds a key, and how to read it.
type pemKind struct {
	typ   string
	parse func(der []byte) (any, error)
}

var (
	pkcs8        = pemKind{"PRIVATE KEY", x509.ParsePKCS8PrivateKey}
	sec1         = pemKind{"EC PRIVATE KEY", func(der []byte) (any, error) { return x509.ParseECPrivateKey(der) }}
	pkcs1        = pemKind{"RSA PRIVATE KEY", func(der []byte) (any, error) { return x509.ParsePKCS1PrivateKey(der) }}
	pkix         = pemKind{"PUBLIC KEY", x509.ParsePKIXPublicKey}
	pkcs1Public  = pemKind{"RSA PUBLIC KEY", func(der []byte) (any, error) { return x509.ParsePKCS1PublicKey(der) }}
	certificate  = pemKind{"CERTIFICATE", parseCertificateKey}
	signingKinds = []pemKind{pkcs8, sec1, pkcs1, pkix, pkcs1Public}
	publicKinds  = []pemKind{pkix, pkcs1Public, certificate}
)

func parseCertificateKey(der []byte) (any, error) {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return c.PublicKey, nil
}

// ParsePEM reads the first key in PEM data, for signing: a private key
// (PKCS #8 "PRIVATE KEY", SEC 1 "EC PRIVATE KEY" or PKCS #1 "RSA PRIVATE
// KEY") or a public key (PKIX "PUBLIC KEY" or PKCS #1 "RSA PUBLIC KEY"),
// which can be published but cannot sign. The key passes Check; ID and
// Algorithm are left empty.
func ParsePEM(data []byte) (Key, error) {
	ks, err := readPEM(data, signingKinds, true)
	if err != nil {
		return Key{}, err
	}
	return ks[0], nil
}

// ParsePublicPEM reads every key in PEM data, for verifying: PKIX "PUBLIC
// KEY", PKCS #1 "RSA PUBLIC KEY" and the public key of each "CERTIFICATE".
// A private key is refused: verifying needs none. Every key passes Check.
func ParsePublicPEM(data []byte) ([]Key, error) {
	return readPEM(data, publicKinds, false)
}

// readPEM reads the blocks of data, of the kinds given, in order; only
// the first key when first is set. Blocks that hold no key, such as the
// "EC PARAMETERS" block `openssl ecparam -genkey` writes, are skipped.
// Errors never quote the PEM text.
func readPEM(data []byte, kinds []pemKind, first bool) ([]Key, error) {
	var out []Key
	for rest := data; !first || len(out) == 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if _, encrypted := block.Headers["Proc-Type"]; encrypted || block.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, errors.New("the key is encrypted; give it unencrypted (for example from a secret store through {env.VAR})")
		}
		if block.Type == "EC PARAMETERS" {
			continue
		}
		i := slices.IndexFunc(kinds, func(k pemKind) bool { return k.typ == block.Type })
		if i < 0 {
			return nil, fmt.Errorf("PEM block %q holds no key of a kind read here (want %s)", block.Type, kindNames(kinds))
		}
		parsed, err := kinds[i].parse(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %q: %w", block.Type, err)
		}
		k, err := keyOf(parsed)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM key found (want a PEM block such as -----BEGIN %s-----)", kinds[0].typ)
	}
	return out, nil
}

// keyOf sorts a parsed key into Key's fields and applies the policy.
func keyOf(parsed any) (Key, error) {
	var k Key
	switch p := parsed.(type) {
	case *ecdsa.PrivateKey:
		k = Key{Public: &p.PublicKey, Private: p}
	case *rsa.PrivateKey:
		k = Key{Public: &p.PublicKey, Private: p}
	case ed25519.PrivateKey:
		k = Key{Public: p.Public(), Private: p}
	default:
		k = Key{Public: parsed}
	}
	if err := Check(k.Public); err != nil {
		return Key{}, err
	}
	return k, nil
}

func kindNames(kinds []pemKind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.typ
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
