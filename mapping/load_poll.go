package mapping

// Loading a request's poll section: the job an answer starts and how to
// follow it.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Poll defaults.
const (
	defaultPollInterval    = time.Second
	defaultPollBackoff     = 1.5
	defaultPollMaxInterval = 30 * time.Second
	defaultPollMaxWait     = 5 * time.Minute
	defaultCancelTimeout   = 5 * time.Second
)

var pollKeys = []string{"when", "url", "interval", "backoff", "max_interval", "max_wait", "done", "failed",
	"message", "result", "cancel", "allow_origins", "retry"}

// defaultPollRetry retries the polls of a request without a retry of its
// own (a POST, usually): a poll is a GET, safe to send again, and one
// that fails once must not end a job that may have run for minutes.
var defaultPollRetry = &retryPolicy{attempts: 3, backoff: defaultBackoff, maxBackoff: defaultMaxBackoff,
	statuses: defaultRetryStatuses}

// poll reads a request's poll section.
func (l *loader) poll(n *yaml.Node, key string) *pollRule {
	p := &pollRule{interval: defaultPollInterval, backoff: defaultPollBackoff, maxInterval: defaultPollMaxInterval,
		maxWait: defaultPollMaxWait}
	l.fields(n, key, pollKeys, func(name string, v *yaml.Node) {
		fkey := key + "." + name
		switch name {
		case "when":
			p.starts = l.expression(v, fkey, phaseResponse, true)
		case "url":
			p.url = l.template(v, fkey, tplOpts{phase: phaseResponse})
		case "interval":
			p.interval = l.duration(v, fkey)
		case "backoff":
			if s, ok := l.scalar(v, fkey); ok {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil || f < 1 || f > 10 {
					l.errorf(v, fkey, "must be a factor from 1 (a steady interval) to 10, not %q", s)
				}
				p.backoff = f
			}
		case "max_interval":
			p.maxInterval = l.duration(v, fkey)
		case "max_wait":
			p.maxWait = l.duration(v, fkey)
		case "done":
			p.done = l.expression(v, fkey, phaseResponse, true)
		case "failed":
			p.failed = l.expression(v, fkey, phaseResponse, true)
		case "message":
			p.message = l.template(v, fkey, tplOpts{phase: phaseResponse})
		case "result":
			p.result = l.template(v, fkey, tplOpts{phase: phaseResponse})
		case "cancel":
			p.cancel = l.cancelCall(v, fkey)
		case "retry":
			p.retry = l.retry(v, fkey)
		case "allow_origins":
			for i, s := range l.stringList(v, fkey) {
				o, err := parseOrigin(s)
				if err != nil {
					l.errorf(v.Content[i], fmt.Sprintf("%s[%d]", fkey, i), "%v", err)
					continue
				}
				p.origins = append(p.origins, o)
			}
		}
	})
	if n.Kind != yaml.MappingNode {
		return nil
	}
	if p.maxInterval < p.interval {
		l.errorf(n, key+".max_interval", "must not be shorter than interval (%s)", p.interval)
	}
	return p
}

var cancelMethods = []string{"DELETE", "POST", "PUT", "PATCH"}

// cancelCall reads poll.cancel: a method alone (cancel: DELETE), or a
// mapping with method, url and timeout.
func (l *loader) cancelCall(n *yaml.Node, key string) *cancelCall {
	c := &cancelCall{method: http.MethodDelete, timeout: defaultCancelTimeout}
	checkMethod := func(v *yaml.Node, fkey string) {
		if m, ok := l.scalar(v, fkey); ok {
			c.method = strings.ToUpper(m)
			if !slices.Contains(cancelMethods, c.method) {
				l.errorf(v, fkey, "must be one of %s, not %q", strings.Join(cancelMethods, ", "), m)
			}
		}
	}
	if n.Kind == yaml.ScalarNode {
		checkMethod(n, key)
		return c
	}
	l.fields(n, key, []string{"method", "url", "timeout"}, func(name string, v *yaml.Node) {
		fkey := key + "." + name
		switch name {
		case "method":
			checkMethod(v, fkey)
		case "url":
			c.url = l.template(v, fkey, tplOpts{phase: phaseResponse})
		case "timeout":
			c.timeout = l.duration(v, fkey)
		}
	})
	return c
}

// parseOrigin checks an allowed origin, scheme://host[:port], and returns
// it as origin() writes it.
func parseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a valid URL", s)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", fmt.Errorf("%q must be an origin such as https://jobs.example.com", s)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q must be an origin alone: a scheme and a host, no user, path or query", s)
	}
	return origin(u), nil
}
