package cardgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// WellKnownResourceMetadata is where a protected resource publishes its
// OAuth 2.0 Protected Resource Metadata (RFC 9728 §3).
const WellKnownResourceMetadata = "/.well-known/oauth-protected-resource"

// ProtectedResource is OAuth 2.0 Protected Resource Metadata (RFC 9728
// §2): what a client (an MCP client) reads to learn which authorization
// server issues tokens for Resource, and how to present them.
type ProtectedResource struct {
	// Resource is the protected resource's identifier: an absolute http
	// or https URL without a fragment, the MCP endpoint's. Required.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer identifiers (RFC 8414) of the
	// authorization servers whose tokens it takes.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// ScopesSupported are the scopes its requirements ask for.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported are how a token may be sent; this agent reads
	// only the Authorization header.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceName is a name for people: the agent's.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is the agent's documentation URL.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
}

// ResourceMetadata is a ProtectedResource ready to serve, like the card:
// its bytes and validators computed once, by NewResourceMetadata. It is
// safe for concurrent use.
type ResourceMetadata struct {
	url  string
	path string // the well-known path with the resource's path inserted
	res  resource
}

// NewResourceMetadata checks and encodes pr, to be served with the card's
// cache headers (Cache-Control max-age maxAge, in whole seconds; an ETag
// and Last-Modified) at ResourceMetadataURL(pr.Resource, endpoint).
func NewResourceMetadata(pr ProtectedResource, endpoint string, maxAge time.Duration) (*ResourceMetadata, error) {
	if maxAge < 0 {
		return nil, fmt.Errorf("cardgen: resource metadata: max-age %s is negative", maxAge)
	}
	docURL, path, err := locate(pr.Resource, endpoint)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, as := range pr.AuthorizationServers {
		if a, err := url.Parse(as); err != nil || (a.Scheme != "https" && a.Scheme != "http") || a.Host == "" || a.RawQuery != "" || a.Fragment != "" {
			errs = append(errs, fmt.Errorf("cardgen: resource metadata: authorization server %q is not an issuer identifier (RFC 8414 §2)", as))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	body, err := json.Marshal(pr)
	if err != nil {
		return nil, fmt.Errorf("cardgen: encoding resource metadata: %w", err)
	}
	return &ResourceMetadata{url: docURL, path: path, res: newResource(body, "application/json", maxAge, time.Now())}, nil
}

// ResourceMetadataURL is the absolute URL of resource's metadata, as a
// ResourceMetadata for it serves it and challenges name it: known before
// the document is made, so that the challenges can be.
//
// endpoint is the resource's path as the handler sees it, "" when that is
// the resource's own path. When a proxy in front removes a prefix
// (Caddy's handle_path), resource's path is that prefix and then
// endpoint, and the document is served below the prefix, where the proxy
// still sends requests, rather than at the origin's well-known path:
// clients find it through the challenges, which name it (RFC 9728 §5.1).
func ResourceMetadataURL(resource, endpoint string) (string, error) {
	docURL, _, err := locate(resource, endpoint)
	return docURL, err
}

// locate checks resource and gives the URL of its metadata and the path
// the handler serves it at: RFC 9728 §3.1 puts the metadata of a resource
// with a path at the well-known path with the resource's path after it.
// Errors do not repeat a credential the URL holds.
func locate(resource, endpoint string) (docURL, path string, err error) {
	u, err := url.Parse(resource)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "", "", errors.New("cardgen: resource metadata: the resource is not an absolute http or https URL")
	case u.User != nil:
		return "", "", fmt.Errorf("cardgen: resource metadata: resource %s holds credentials", u.Redacted())
	case u.Fragment != "" || strings.Contains(resource, "#"):
		return "", "", fmt.Errorf("cardgen: resource metadata: resource %q has a fragment (RFC 9728 §2)", resource)
	}
	prefix := ""
	if endpoint != "" {
		var ok bool
		prefix, ok = strings.CutSuffix(u.Path, endpoint)
		if !ok || endpoint[0] != '/' {
			return "", "", fmt.Errorf("cardgen: resource metadata: the path of resource %q does not end with the endpoint's path %q", resource, endpoint)
		}
	}
	path = WellKnownResourceMetadata + strings.TrimSuffix(strings.TrimPrefix(u.Path, prefix), "/")
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: prefix + path}).String(), path, nil
}

// URL is the absolute URL of the document, which challenges name
// (resource_metadata, RFC 9728 §5.1).
func (m *ResourceMetadata) URL() string { return m.url }

// Serves reports whether a request for path gets the document: at URL's
// path, and at the bare well-known path, where clients that know only the
// origin look (MCP's fall back to it).
func (m *ResourceMetadata) Serves(path string) bool {
	return path == m.path || path == WellKnownResourceMetadata
}

// ServeHTTP answers as the card does (Document.ServeHTTP): GET and HEAD,
// 304 on a matching If-None-Match, 405 otherwise.
func (m *ResourceMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.res.serveHTTP(w, r) }
