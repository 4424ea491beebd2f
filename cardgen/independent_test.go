package cardgen_test

// An independent verifier, written from spec 1.0 §8.4 and the 1.0 proto
// and sharing no code with the package under test: the card is decoded
// into structs that mirror the AgentCard message (REQUIRED fields always
// written, `optional` fields written when present, other fields omitted at
// their default value), re-encoded, canonicalized with RFC 8785
// (gowebpki/jcs), and each signature is checked over the JWS signing input
// BASE64URL(protected) || '.' || BASE64URL(payload) with golang-jwt's
// verification. The served form (the card as served, signatures removed)
// is checked the same way.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gowebpki/jcs"
)

type specCard struct {
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	SupportedInterfaces  []specInterface       `json:"supportedInterfaces"`
	Provider             *specProvider         `json:"provider,omitempty"`
	Version              string                `json:"version"`
	DocumentationURL     *string               `json:"documentationUrl,omitempty"`
	Capabilities         specCapabilities      `json:"capabilities"`
	SecuritySchemes      map[string]specScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []specRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string              `json:"defaultInputModes"`
	DefaultOutputModes   []string              `json:"defaultOutputModes"`
	Skills               []specSkill           `json:"skills"`
	IconURL              *string               `json:"iconUrl,omitempty"`
}

type specInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

type specProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

type specCapabilities struct {
	Streaming         *bool           `json:"streaming,omitempty"`
	PushNotifications *bool           `json:"pushNotifications,omitempty"`
	Extensions        []specExtension `json:"extensions,omitempty"`
	ExtendedAgentCard *bool           `json:"extendedAgentCard,omitempty"`
}

type specExtension struct {
	URI         string          `json:"uri,omitempty"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
}

type specSkill struct {
	ID                   string            `json:"id"`
	Name                 string            `json:"name"`
	Description          string            `json:"description"`
	Tags                 []string          `json:"tags"`
	Examples             []string          `json:"examples,omitempty"`
	InputModes           []string          `json:"inputModes,omitempty"`
	OutputModes          []string          `json:"outputModes,omitempty"`
	SecurityRequirements []specRequirement `json:"securityRequirements,omitempty"`
}

type specRequirement struct {
	Schemes map[string]specStringList `json:"schemes,omitempty"`
}

type specStringList struct {
	List []string `json:"list,omitempty"`
}

type specScheme struct {
	APIKey *struct {
		Description string `json:"description,omitempty"`
		Location    string `json:"location"`
		Name        string `json:"name"`
	} `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth *struct {
		Description  string `json:"description,omitempty"`
		Scheme       string `json:"scheme"`
		BearerFormat string `json:"bearerFormat,omitempty"`
	} `json:"httpAuthSecurityScheme,omitempty"`
	OAuth2 *struct {
		Description       string    `json:"description,omitempty"`
		Flows             specFlows `json:"flows"`
		OAuth2MetadataURL string    `json:"oauth2MetadataUrl,omitempty"`
	} `json:"oauth2SecurityScheme,omitempty"`
	OpenIDConnect *struct {
		Description      string `json:"description,omitempty"`
		OpenIDConnectURL string `json:"openIdConnectUrl"`
	} `json:"openIdConnectSecurityScheme,omitempty"`
	MutualTLS *struct {
		Description string `json:"description,omitempty"`
	} `json:"mtlsSecurityScheme,omitempty"`
}

type specFlows struct {
	AuthorizationCode *struct {
		AuthorizationURL string            `json:"authorizationUrl"`
		TokenURL         string            `json:"tokenUrl"`
		RefreshURL       string            `json:"refreshUrl,omitempty"`
		Scopes           map[string]string `json:"scopes"`
		PKCERequired     bool              `json:"pkceRequired,omitempty"`
	} `json:"authorizationCode,omitempty"`
	ClientCredentials *struct {
		TokenURL   string            `json:"tokenUrl"`
		RefreshURL string            `json:"refreshUrl,omitempty"`
		Scopes     map[string]string `json:"scopes"`
	} `json:"clientCredentials,omitempty"`
	DeviceCode *struct {
		DeviceAuthorizationURL string            `json:"deviceAuthorizationUrl"`
		TokenURL               string            `json:"tokenUrl"`
		RefreshURL             string            `json:"refreshUrl,omitempty"`
		Scopes                 map[string]string `json:"scopes"`
	} `json:"deviceCode,omitempty"`
	Implicit *struct {
		AuthorizationURL string            `json:"authorizationUrl,omitempty"`
		RefreshURL       string            `json:"refreshUrl,omitempty"`
		Scopes           map[string]string `json:"scopes,omitempty"`
	} `json:"implicit,omitempty"`
	Password *struct {
		TokenURL   string            `json:"tokenUrl,omitempty"`
		RefreshURL string            `json:"refreshUrl,omitempty"`
		Scopes     map[string]string `json:"scopes,omitempty"`
	} `json:"password,omitempty"`
}

// specPayload is the §8.4.1 payload of a served card: the 1.0 AgentCard
// with the field-presence rules, without signatures, RFC 8785.
func specPayload(t testing.TB, served []byte) []byte {
	t.Helper()
	var c specCard
	if err := json.Unmarshal(served, &c); err != nil {
		t.Fatalf("independent verifier: decoding the card: %v", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// servedPayload is the card as served, signatures removed, RFC 8785.
func servedPayload(t testing.TB, served []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(served, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "signatures")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// independentVerify returns, for each signature of the card, the name of
// the payload ("spec" or "served") it verifies over with a key of jwks, or
// "" when it verifies over neither.
func independentVerify(t testing.TB, served, jwks []byte) []string {
	t.Helper()
	keys := parseJWKSIndependently(t, jwks)
	var card struct {
		Signatures []struct {
			Protected string `json:"protected"`
			Signature string `json:"signature"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(served, &card); err != nil {
		t.Fatal(err)
	}
	payloads := []struct {
		name string
		b    []byte
	}{{"spec", specPayload(t, served)}, {"served", servedPayload(t, served)}}
	enc := base64.RawURLEncoding
	out := make([]string, len(card.Signatures))
	for i, s := range card.Signatures {
		hb, err := enc.DecodeString(s.Protected)
		if err != nil {
			t.Fatalf("signature %d: protected: %v", i, err)
		}
		var h struct{ Alg, Kid, Typ string }
		if err := json.Unmarshal(hb, &h); err != nil {
			t.Fatalf("signature %d: protected header: %v", i, err)
		}
		key, ok := keys[h.Kid]
		if !ok {
			continue
		}
		sig, err := enc.DecodeString(s.Signature)
		if err != nil {
			t.Fatalf("signature %d: %v", i, err)
		}
		method := jwt.GetSigningMethod(h.Alg)
		if method == nil {
			t.Fatalf("signature %d: unknown alg %q", i, h.Alg)
		}
		for _, p := range payloads {
			if method.Verify(s.Protected+"."+enc.EncodeToString(p.b), sig, key) == nil {
				out[i] = p.name
				break
			}
		}
	}
	return out
}

// parseJWKSIndependently reads EC, RSA and OKP public keys by kid.
func parseJWKSIndependently(t testing.TB, data []byte) map[string]crypto.PublicKey {
	t.Helper()
	var set struct {
		Keys []struct{ Kty, Kid, Crv, X, Y, N, E string }
	}
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		switch k.Kty {
		case "EC":
			curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384()}[k.Crv]
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, dec(k.X)...), dec(k.Y)...))
			if err != nil {
				t.Fatal(err)
			}
			out[k.Kid] = pub
		case "RSA":
			out[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(dec(k.N)), E: int(new(big.Int).SetBytes(dec(k.E)).Int64())}
		case "OKP":
			out[k.Kid] = ed25519.PublicKey(dec(k.X))
		default:
			t.Fatalf("independent verifier: key type %s", k.Kty)
		}
	}
	return out
}
