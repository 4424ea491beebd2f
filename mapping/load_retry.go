package mapping

// Loading a retry section: how often, how soon and on which answers a
// request is sent again.

import (
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Retry defaults.
const (
	defaultBackoff    = 100 * time.Millisecond
	defaultMaxBackoff = 5 * time.Second
)

var defaultRetryStatuses = []int{502, 503, 504}

func (l *loader) retry(n *yaml.Node, key string) *retryPolicy {
	p := &retryPolicy{backoff: defaultBackoff, maxBackoff: defaultMaxBackoff, statuses: defaultRetryStatuses}
	hasAttempts := false
	l.fields(n, key, []string{"attempts", "backoff", "max_backoff", "statuses"}, func(name string, v *yaml.Node) {
		switch name {
		case "attempts":
			hasAttempts = true
			p.attempts = l.positiveInt(v, key+".attempts")
			if p.attempts > 10 {
				l.errorf(v, key+".attempts", "must be at most 10, not %d", p.attempts)
			}
		case "backoff":
			p.backoff = l.duration(v, key+".backoff")
		case "max_backoff":
			p.maxBackoff = l.duration(v, key+".max_backoff")
		case "statuses":
			p.statuses = nil
			for i, s := range l.stringList(v, key+".statuses") {
				code, err := strconv.Atoi(s)
				if err != nil || code < 400 || code > 599 {
					l.errorf(v.Content[i], fmt.Sprintf("%s.statuses[%d]", key, i), "must be an HTTP status from 400 to 599, not %q", s)
					continue
				}
				p.statuses = append(p.statuses, code)
			}
		}
	})
	if n.Kind != yaml.MappingNode {
		return nil
	}
	if !hasAttempts {
		l.errorf(n, key+".attempts", "is required: how many times in all the request may be sent")
	}
	return p
}
