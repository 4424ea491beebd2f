// Package verifycard checks the signatures of an A2A Agent Card, fetched
// from an agent or read from a file, and writes for each signature which
// key and payload form it verified with, or why it did not: the report of
// caddy a2a-verify-card. The checking itself is cardgen.Verify, the code
// the module's own tests sign and verify with.
package verifycard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

// Config is what to verify, and with which keys.
type Config struct {
	// Card is where the card is: an http or https URL (one with no path
	// gets /.well-known/agent-card.json) or a file.
	Card string
	// JWKS is the trusted key set, a URL or a file. Empty means each
	// signature's jku, which the card names itself: that checks the card's
	// integrity against the keys its host publishes, not who published it.
	JWKS string
	// Any accepts the card when one signature verifies even if another is
	// Invalid, as the official SDKs do. By default an Invalid signature
	// rejects the card.
	Any bool
	// Forms are the payload forms a signature may cover; nil means all.
	Forms []cardgen.Form
	// Client fetches URLs; nil means a client with a 10 s timeout.
	Client *http.Client
}

// maxFetch caps a card or key set read from a URL or a file.
const maxFetch = 1 << 20

// Run verifies a card's signatures and writes to w which signature
// verified with which key and form, or why it did not. It returns nil when
// the card verified (cardgen.Report.OK), and otherwise an error that says
// why not.
func Run(ctx context.Context, w io.Writer, cfg Config) error {
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	cardSrc := cfg.Card
	if u, err := url.Parse(cardSrc); err == nil && isHTTP(u) && (u.Path == "" || u.Path == "/") {
		u.Path = "/.well-known/agent-card.json"
		cardSrc = u.String()
	}
	card, err := fetch(ctx, client, cardSrc)
	if err != nil {
		return fmt.Errorf("reading the card: %w", err)
	}
	var head struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(card, &head)
	fmt.Fprintf(w, "card: %s (%q)\n", cardSrc, head.Name)

	var keys cardgen.KeySource
	if cfg.JWKS != "" {
		data, err := fetch(ctx, client, cfg.JWKS)
		if err != nil {
			return fmt.Errorf("reading the key set: %w", err)
		}
		ks, err := cardgen.ParseJWKS(data)
		if err != nil {
			return fmt.Errorf("reading the key set %s: %w", cfg.JWKS, err)
		}
		fmt.Fprintf(w, "keys: %s (trusted; %s)\n", cfg.JWKS, keyIDs(ks))
		keys = ks
	} else {
		fmt.Fprintln(w, "keys: from each signature's jku: the card names its own key set, so this checks integrity, not authorship; pin a key set with --jwks")
		keys = &jkuSource{ctx: ctx, client: client, sets: map[string]*cardgen.KeySet{}, errs: map[string]error{}}
	}

	report, err := cardgen.Verify(card, keys, cardgen.VerifyOptions{Forms: cfg.Forms})
	if err != nil {
		return err
	}
	n := len(report.Signatures)
	for _, s := range report.Signatures {
		fmt.Fprintf(w, "signature %d/%d: %-10s kid %q, alg %s", s.Index+1, n, s.Status, s.KeyID, s.Algorithm)
		if s.Status == cardgen.Verified {
			fmt.Fprintf(w, ", form %s (%s)\n", s.Form, formCovers[s.Form])
		} else {
			fmt.Fprintf(w, ": %v\n", s.Err)
		}
		for _, warn := range s.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
	}
	verified, invalid := report.Count(cardgen.Verified), report.Count(cardgen.Invalid)
	summary := fmt.Sprintf("%d of %d signatures verified, %d invalid", verified, n, invalid)
	switch {
	case report.OK(cfg.Any):
		fmt.Fprintf(w, "result: verified (%s)\n", summary)
		return nil
	case verified == 0:
		fmt.Fprintf(w, "result: NOT verified (%s)\n", summary)
		return errors.New("the card is not verified: no signature verified")
	default:
		fmt.Fprintf(w, "result: NOT verified (%s)\n", summary)
		return errors.New("the card is not verified: a signature made with a known key does not match it (--any accepts a card when one signature verifies)")
	}
}

// jkuSource fetches the key set each signature's jku names, once per URL.
type jkuSource struct {
	ctx    context.Context
	client *http.Client
	sets   map[string]*cardgen.KeySet
	errs   map[string]error
}

func (s *jkuSource) Key(kid, jku string) (cardgen.Key, error) {
	if jku == "" {
		return cardgen.Key{}, fmt.Errorf("%w: the protected header has no jku; give the key set with --jwks", cardgen.ErrKeyNotFound)
	}
	if err, failed := s.errs[jku]; failed {
		return cardgen.Key{}, err
	}
	ks, ok := s.sets[jku]
	if !ok {
		var err error
		if ks, err = s.load(jku); err != nil {
			err = fmt.Errorf("the key set at jku %s: %w", jku, err)
			s.errs[jku] = err
			return cardgen.Key{}, err
		}
		s.sets[jku] = ks
	}
	return ks.Key(kid, jku)
}

func (s *jkuSource) load(jku string) (*cardgen.KeySet, error) {
	u, err := url.Parse(jku)
	if err != nil || !isHTTP(u) {
		return nil, errors.New("not an absolute http or https URL")
	}
	data, err := fetch(s.ctx, s.client, jku)
	if err != nil {
		return nil, err
	}
	return cardgen.ParseJWKS(data)
}

// keyIDs lists a key set's kids for the report.
func keyIDs(ks *cardgen.KeySet) string {
	keys := ks.Keys()
	if len(keys) == 0 {
		return "no keys"
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k.ID)
	}
	return strings.Join(q, ", ")
}

// formCovers says in a few words what each payload form covers.
var formCovers = map[cardgen.Form]string{
	cardgen.FormSpec:   "the 1.0 fields, spec §8.4.1",
	cardgen.FormPruned: "the 1.0 fields, empty values pruned as the JS and Python SDKs do",
	cardgen.FormServed: "the card as served, 0.3 fields included",
}

func isHTTP(u *url.URL) bool { return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" }

// fetch reads src, an http or https URL or a file, up to maxFetch bytes.
func fetch(ctx context.Context, client *http.Client, src string) ([]byte, error) {
	var r io.Reader
	if u, err := url.Parse(src); err == nil && isHTTP(u) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", src, resp.Status)
		}
		r = resp.Body
	} else {
		if strings.Contains(src, "://") {
			return nil, fmt.Errorf("%s: only http and https URLs, or files, are read", src)
		}
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxFetch+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", src, err)
	}
	if len(data) > maxFetch {
		return nil, fmt.Errorf("%s is larger than %d bytes", src, maxFetch)
	}
	return data, nil
}
