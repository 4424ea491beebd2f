package mapping

// Media types: comparing them, and whether a body of one is JSON.

import (
	"strings"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// acceptsMedia reports whether a media type is among the accepted ones
// (with wildcards); no accepted types accept everything.
func acceptsMedia(accepted []string, mediaType string) bool {
	if len(accepted) == 0 {
		return true
	}
	for _, a := range accepted {
		if mediaMatch(a, mediaType) {
			return true
		}
	}
	return false
}

// mediaMatch reports whether two media types are compatible: equal, or one
// is a wildcard (*/*, type/*) that covers the other. Parameters and case
// are ignored.
func mediaMatch(a, b string) bool {
	a, b = mediaTypeOf(a), mediaTypeOf(b)
	if a == b || a == "*/*" || b == "*/*" || a == "*" || b == "*" {
		return true
	}
	at, as, _ := strings.Cut(a, "/")
	bt, bs, _ := strings.Cut(b, "/")
	return at == bt && (as == "*" || bs == "*")
}

// mediaTypeOf is a Content-Type without parameters, lower-cased.
func mediaTypeOf(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	for i := 0; i < len(ct); i++ {
		if c := ct[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(ct)
		}
	}
	return ct
}

// isJSON reports whether a body of this media type is JSON: a JSON media
// type, or none at all and a body that parses.
func isJSON(mediaType string, body []byte) bool {
	if mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") {
		return true
	}
	return mediaType == "" && len(body) > 0 && jsonx.Valid(body)
}
