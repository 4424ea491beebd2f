package caddymodule

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/keys"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// SigningConfig signs the Agent Card (spec 1.0 §8.4: RFC 8785 JCS and a
// JWS with a detached payload) and publishes the public keys as a JWK Set.
// The card is signed once, at provision time, with the active key; every
// configured key is published. Rotating a key is three config reloads: add
// the new key, switch active to it, later remove the old one. A client that
// verifies with the JWKS never sees a card its cached key set cannot
// verify, provided each step waits for the card and JWKS max-age.
type SigningConfig struct {
	// Keys are the keys, in order. Each is a PEM file or a placeholder such
	// as {env.A2A_SIGNING_KEY}; see SigningKey. In the Caddyfile, each is
	// key <file|{env.VAR}> [<kid> [<alg>]].
	Keys []SigningKey `json:"keys,omitempty"`

	// GenerateKey adds a key generated at first start and kept in Caddy's
	// storage (ctx.Storage()), so it survives restarts and is shared by
	// instances that share storage. Its use is logged. In the Caddyfile:
	// generate_key [<kid> [<alg>]].
	GenerateKey *GeneratedKey `json:"generate_key,omitempty"`

	// Active is the kid of the key that signs. Required when more than one
	// key has a private part; a key given as a public key only is
	// published, never active.
	Active string `json:"active,omitempty"`

	// JWKSPath is the request path at which the JWK Set is served, with
	// the card's Cache-Control max-age. Default: /.well-known/jwks.json.
	JWKSPath string `json:"jwks_path,omitempty"`

	// JWKSURL is the absolute URL of the JWK Set that goes into each
	// signature's protected header as jku. Default: the scheme and host of
	// url, with jwks_path.
	JWKSURL string `json:"jwks_url,omitempty"`

	// Forms are the payload forms signed, each distinct one once: spec
	// (spec 1.0 §8.4.1 over the 1.0 fields), pruned (empty values removed,
	// as @a2a-js/sdk 1.x and a2a-sdk for Python 1.x verify) and served (the
	// card as served, the 0.3 fields included, as a2a-go's a2acrypto
	// verifies). Default: all three.
	Forms []string `json:"forms,omitempty"`
}

// SigningKey is one configured key.
type SigningKey struct {
	// Key is the PEM key (PKCS #8, SEC 1 or PKCS #1 private key; a PKIX
	// public key to publish a key that no longer signs). It is a file path,
	// relative to Caddy's working directory, or a placeholder such as
	// {env.A2A_SIGNING_KEY} whose value is the PEM text or a file path.
	// Use {env.*}, not {$*}: the latter writes the key into the adapted
	// JSON config.
	Key string `json:"key"`

	// ID is the key's kid. Default: its RFC 7638 thumbprint.
	ID string `json:"id,omitempty"`

	// Algorithm is the JWS alg: ES256, ES384, RS256, PS256 or EdDSA.
	// Default: ES256 for a P-256 key, ES384 for P-384, RS256 for RSA,
	// EdDSA for Ed25519.
	Algorithm string `json:"algorithm,omitempty"`
}

// GeneratedKey is the key generated at first start.
type GeneratedKey struct {
	// ID is the key's kid. Default: its RFC 7638 thumbprint (logged at
	// start and published in the JWKS).
	ID string `json:"id,omitempty"`

	// Algorithm is the key's algorithm. Default: ES256.
	Algorithm string `json:"algorithm,omitempty"`
}

// validate checks what can be checked without reading keys.
func (s *SigningConfig) validate() error {
	if len(s.Keys) == 0 && s.GenerateKey == nil {
		return errors.New("no key: configure a key or generate_key")
	}
	for i, k := range s.Keys {
		if k.Key == "" {
			return fmt.Errorf("key %d: the key (a PEM file or a placeholder) is empty", i+1)
		}
		if err := checkSigningAlgorithm(k.Algorithm); err != nil {
			return fmt.Errorf("key %d: %w", i+1, err)
		}
	}
	if g := s.GenerateKey; g != nil {
		if err := checkSigningAlgorithm(g.Algorithm); err != nil {
			return fmt.Errorf("generate_key: %w", err)
		}
	}
	if p := s.JWKSPath; p != "" && (!strings.HasPrefix(p, "/") || p == server.CardPath || p == server.LegacyCardPath) {
		return fmt.Errorf("jwks_path %q must start with / and not be a card path", p)
	}
	if s.JWKSURL != "" {
		if err := checkAbsoluteURL(s.JWKSURL); err != nil {
			return fmt.Errorf("jwks_url: %w", err)
		}
	}
	if _, err := cardgen.ParseForms(s.Forms); err != nil {
		return fmt.Errorf("forms: %w", err)
	}
	return nil
}

func checkSigningAlgorithm(alg string) error {
	if alg != "" && !slices.Contains(cardgen.SigningAlgorithms, alg) {
		return fmt.Errorf("algorithm %q is not one of %s", alg, strings.Join(cardgen.SigningAlgorithms, ", "))
	}
	return nil
}

// jwksPath is where the JWK Set is served.
func (s *SigningConfig) jwksPath() string {
	if s.JWKSPath != "" {
		return s.JWKSPath
	}
	return cardgen.DefaultJWKSPath
}

// signingFeature is the signing block: the card's signer and the JWK Set,
// which also publishes push's own key.
type signingFeature struct{ noSteps }

func (signingFeature) setting(h *Handler) setting {
	return setting{"signing", setBlock(&h.Signing, parseSigning)}
}

func (signingFeature) validate(h *Handler) error {
	return checkBlock("signing", h.Signing, (*SigningConfig).validate)
}

// sign loads the keys, push's among them, and makes the card's signer and
// the JWK Set; push notifications are signed with the card's active key
// unless push has its own.
func (signingFeature) sign(a *assembly) error {
	h := a.h
	if h.Signing == nil {
		return nil
	}
	var published []cardgen.Key
	if h.Push != nil && h.Push.Key != nil {
		var err error
		if a.pushKey, err = h.Push.pushKey(cardgen.Key{}); err != nil {
			return err
		}
		published = append(published, cardgen.Key{ID: a.pushKey.ID, Algorithm: a.pushKey.Algorithm, Public: a.pushKey.Public})
	}
	signer, jwks, err := h.provisionSigning(a.ctx, published...)
	if err != nil {
		return err
	}
	if a.pushKey.Private == nil {
		a.pushKey = signer.Key()
	}
	a.agent.CardOptions = append(a.agent.CardOptions, cardgen.WithSigner(signer))
	a.server.JWKS, a.server.JWKSPath = jwks, h.Signing.jwksPath()
	return nil
}

// provisionSigning loads the keys, generating the stored one if need be,
// and returns the card signer and the JWK Set to serve, which also
// publishes the public keys given (the push notifications' own key).
func (h *Handler) provisionSigning(ctx caddy.Context, published ...cardgen.Key) (*cardgen.Signer, *cardgen.JWKS, error) {
	s := h.Signing
	repl := caddy.NewReplacer()
	loaded := make([]cardgen.Key, 0, len(s.Keys)+1)
	for i, sk := range s.Keys {
		k, err := loadKey(repl, sk.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("signing: key %d: %w", i+1, err)
		}
		k.ID, k.Algorithm = sk.ID, sk.Algorithm
		loaded = append(loaded, k)
	}
	if s.GenerateKey != nil {
		k, err := h.storedKey(ctx, s.GenerateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("signing: generate_key: %w", err)
		}
		loaded = append(loaded, k)
	}
	ks, err := cardgen.NewKeySet(loaded...)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	jku := s.JWKSURL
	if jku == "" {
		u, err := url.Parse(h.URL)
		if err != nil {
			return nil, nil, fmt.Errorf("signing: url: %w", err)
		}
		jku = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: s.jwksPath()}).String()
	}
	forms, err := cardgen.ParseForms(s.Forms)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: forms: %w", err)
	}
	if len(forms) == 0 {
		forms = nil // the default forms
	}
	signer, err := cardgen.NewSigner(cardgen.SignerConfig{Keys: ks, Active: s.Active, JWKSURL: jku, Forms: forms})
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	maxAge := cardgen.DefaultMaxAge
	if h.CardMaxAge > 0 {
		maxAge = time.Duration(h.CardMaxAge)
	}
	publishedSet := ks
	if len(published) > 0 {
		if publishedSet, err = cardgen.NewKeySet(append(ks.Keys(), published...)...); err != nil {
			return nil, nil, fmt.Errorf("signing: the JWKS with the push key: %w", err)
		}
	}
	jwks, err := cardgen.NewJWKS(publishedSet, maxAge)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	publishedIDs := make([]string, 0, len(loaded)+len(published))
	for _, k := range publishedSet.Keys() {
		publishedIDs = append(publishedIDs, k.ID)
	}
	active := signer.Key()
	h.logger.Info("signing the agent card",
		zap.String("kid", active.ID),
		zap.String("alg", active.Algorithm),
		zap.String("jku", jku),
		zap.Strings("published", publishedIDs),
		zap.Any("forms", signer.Forms()))
	return signer, jwks, nil
}

// loadKey reads a key from a PEM file, a placeholder, or PEM text given
// inline. Errors name the file or the placeholder, never key material.
func loadKey(repl *caddy.Replacer, src string) (cardgen.Key, error) {
	v := repl.ReplaceKnown(src, "")
	fromPlaceholder := v != src
	if strings.Contains(v, "-----BEGIN") {
		k, err := keys.ParsePEM([]byte(v))
		if err != nil {
			if fromPlaceholder {
				return cardgen.Key{}, fmt.Errorf("%s: %w", src, err)
			}
			return cardgen.Key{}, fmt.Errorf("inline PEM key: %w", err)
		}
		return k, nil
	}
	if v == "" {
		return cardgen.Key{}, fmt.Errorf("%s is empty (is the environment variable set?)", src)
	}
	name := v
	if !fromPlaceholder {
		if abs, err := filepath.Abs(v); err == nil {
			name = abs
		}
	}
	data, err := os.ReadFile(name)
	if err != nil {
		if fromPlaceholder {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return cardgen.Key{}, fmt.Errorf("%s is neither PEM text nor a readable file: %v", src, err)
		}
		return cardgen.Key{}, fmt.Errorf("key file: %w", err)
	}
	k, err := keys.ParsePEM(data)
	if err != nil {
		if fromPlaceholder {
			return cardgen.Key{}, fmt.Errorf("the file %s names: %w", src, err)
		}
		return cardgen.Key{}, fmt.Errorf("key file %s: %w", name, err)
	}
	return k, nil
}

// storedKey returns the generated key, from Caddy's storage, generating and
// storing it at first start. A lock keeps instances that share storage from
// generating two.
func (h *Handler) storedKey(ctx caddy.Context, g *GeneratedKey) (cardgen.Key, error) {
	alg := g.Algorithm
	if alg == "" {
		alg = cardgen.DefaultAlgorithm
	}
	name := g.ID
	if name == "" {
		name = "default-" + strings.ToLower(alg)
	}
	storage := ctx.Storage()
	key := path.Join("caddy-a2a", "signing-keys", storageDir(h.URL), storageName(name)+".pem")
	data, err := storage.Load(ctx, key)
	generated := false
	if errors.Is(err, fs.ErrNotExist) {
		if err := storage.Lock(ctx, key); err != nil {
			return cardgen.Key{}, fmt.Errorf("locking %s in storage: %w", key, err)
		}
		defer func() {
			if err := storage.Unlock(ctx, key); err != nil {
				h.logger.Error("unlocking the signing key in storage", zap.String("storage_key", key), zap.Error(err))
			}
		}()
		if data, err = storage.Load(ctx, key); errors.Is(err, fs.ErrNotExist) {
			if _, data, err = cardgen.GenerateKey(alg); err != nil {
				return cardgen.Key{}, err
			}
			if err = storage.Store(ctx, key, data); err != nil {
				return cardgen.Key{}, fmt.Errorf("storing the generated key as %s: %w", key, err)
			}
			generated = true
		}
	}
	if err != nil {
		return cardgen.Key{}, fmt.Errorf("loading %s from storage: %w", key, err)
	}
	k, err := keys.ParsePEM(data)
	if err != nil {
		return cardgen.Key{}, fmt.Errorf("the key stored as %s: %w", key, err)
	}
	k.ID, k.Algorithm = g.ID, alg
	if k.ID == "" {
		if k.ID, err = keys.Thumbprint(k.Public); err != nil {
			return cardgen.Key{}, fmt.Errorf("the key stored as %s: %w", key, err)
		}
	}
	msg := "using the generated agent card signing key from storage"
	if generated {
		msg = "generated an agent card signing key and stored it"
	}
	h.logger.Info(msg,
		zap.String("kid", k.ID),
		zap.String("alg", alg),
		zap.String("storage_key", key),
		zap.String("storage", fmt.Sprintf("%T", storage)))
	return k, nil
}

// storageDir names an agent's directory in storage after its url.
func storageDir(agentURL string) string {
	u, err := url.Parse(agentURL)
	if err != nil {
		return storageName(agentURL)
	}
	return storageName(u.Host + u.Path)
}

// storageName keeps letters, digits, dots and hyphens, and turns every run
// of anything else into one underscore.
func storageName(s string) string {
	var b strings.Builder
	underscore := false
	for _, r := range s {
		if r < 0x80 && (r == '.' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			b.WriteRune(r)
			underscore = false
		} else if !underscore {
			b.WriteByte('_')
			underscore = true
		}
	}
	return strings.Trim(b.String(), "_")
}

// keyArgs reads a key subdirective: key <file|{env.VAR}> [<kid> [<alg>]].
func keyArgs(d *caddyfile.Dispenser, at string) (SigningKey, error) {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 3 {
		return SigningKey{}, d.Errf("%s: want <file|{env.VAR}> [<kid> [<alg>]], got %d arguments", at, len(args))
	}
	args = append(args, "", "")
	if err := checkSigningAlgorithm(args[2]); err != nil {
		return SigningKey{}, d.Errf("%s: %v", at, err)
	}
	return SigningKey{Key: args[0], ID: args[1], Algorithm: args[2]}, nil
}

// parseSigning reads the signing block.
func parseSigning(d *caddyfile.Dispenser, where string) (*SigningConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	s := new(SigningConfig)
	err := parseSettings(d, where, []string{"key"}, []setting{
		{"key", func(d *caddyfile.Dispenser, at string) error {
			k, err := keyArgs(d, at)
			if err == nil {
				s.Keys = append(s.Keys, k)
			}
			return err
		}},
		{"generate_key", func(d *caddyfile.Dispenser, at string) error {
			args := d.RemainingArgs()
			if len(args) > 2 {
				return d.Errf("%s: want [<kid> [<alg>]], got %d arguments", at, len(args))
			}
			args = append(args, "", "")
			if err := checkSigningAlgorithm(args[1]); err != nil {
				return d.Errf("%s: %v", at, err)
			}
			s.GenerateKey = &GeneratedKey{ID: args[0], Algorithm: args[1]}
			return nil
		}},
		{"active", setString(&s.Active)},
		{"jwks_path", setString(&s.JWKSPath)},
		{"jwks_url", setString(&s.JWKSURL)},
		{"forms", func(d *caddyfile.Dispenser, at string) (err error) {
			if s.Forms, err = someArgs(d, at); err == nil {
				if _, ferr := cardgen.ParseForms(s.Forms); ferr != nil {
					err = d.Errf("%s: %v", at, ferr)
				}
			}
			return err
		}},
	})
	if err != nil {
		return nil, err
	}
	if len(s.Keys) == 0 && s.GenerateKey == nil {
		return nil, d.Errf("%s: no key: add key <file|{env.VAR}> or generate_key", where)
	}
	return s, nil
}
