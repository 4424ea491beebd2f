package mapping

// Skills that make several upstream calls: steps, each able to read the
// answers of the steps before it as steps.<name>.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// step is one upstream call of a skill.
type step struct {
	name    string // "" for a skill's plain request
	request request
	// rules may end the run after this call; a response no rule claims
	// goes on to the next step when it is 2xx. The last step has none:
	// the skill's response rules map its answer.
	rules []rule
}

func stepNames(steps []step) []string {
	var names []string
	for i := range steps {
		if steps[i].name != "" {
			names = append(names, steps[i].name)
		}
	}
	return names
}

// steps reads a skill's steps section.
func (l *loader) steps(n *yaml.Node, up upstreamConfig) []step {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		l.errorf(n, "steps", "must be a list of at least one step, not %s", describe(n))
		return nil
	}
	defer func() { l.c.steps = nil }()
	out := make([]step, 0, len(n.Content))
	var names []string
	for i, sn := range n.Content {
		sn = resolve(sn)
		key := fmt.Sprintf("steps[%d]", i)
		var st step
		var reqNode, respNode *yaml.Node
		l.fields(sn, key, []string{"name", "request", "response"}, func(name string, v *yaml.Node) {
			switch name {
			case "name":
				if s, ok := l.scalar(v, key+".name"); ok {
					switch {
					case !argName.MatchString(s):
						l.errorf(v, key+".name", "%q is not a valid step name: use letters, digits and '_', not starting with a digit", s)
					case slices.Contains(names, s):
						l.errorf(v, key+".name", "repeated step name %q", s)
					default:
						st.name = s
					}
				}
			case "request":
				reqNode = v
			case "response":
				respNode = v
			}
		})
		if sn.Kind != yaml.MappingNode {
			continue
		}
		if st.name == "" && !slices.ContainsFunc(sn.Content, func(k *yaml.Node) bool { return k.Value == "name" }) {
			l.errorf(sn, key+".name", "is required: later steps read this step's answer as steps.<name>")
		}
		l.c.steps = names
		if reqNode == nil {
			l.errorf(sn, key+".request", "is required")
		} else {
			st.request = l.request(reqNode, key+".request", up)
		}
		if st.name != "" {
			names = append(names, st.name)
		}
		if respNode != nil {
			if i == len(n.Content)-1 {
				l.errorf(respNode, key+".response", "the last step's answer is mapped by the skill's response rules")
			} else {
				l.c.steps = names
				st.rules = l.rules(respNode, key+".response")
			}
		}
		out = append(out, st)
	}
	return out
}

// send sends req, and sends it again as its retry policy allows: after a
// transport error or a status the policy names, waiting longer each time,
// never past the skill's deadline. It returns the answer with its body
// read, or why there is none.
func (sk *Skill) send(parent, callCtx context.Context, req *http.Request, p *retryPolicy) (*http.Response, []byte, *failure) {
	attempts := 1
	if p != nil {
		attempts = p.attempts
	}
	for attempt := 1; ; attempt++ {
		resp, err := sk.set.up.transport.RoundTrip(req)
		retry := attempt < attempts && callCtx.Err() == nil &&
			(err != nil || slices.Contains(p.statuses, resp.StatusCode))
		if retry {
			wait := p.wait(attempt, resp)
			if dl, ok := callCtx.Deadline(); !ok || time.Until(dl) > wait {
				if resp != nil {
					discard(resp)
				}
				if !sleep(callCtx, wait) {
					f := sk.transportFailure(parent, callCtx, context.Cause(callCtx))
					return nil, nil, &f
				}
				req = rewind(req)
				continue
			}
		}
		if err != nil {
			f := sk.transportFailure(parent, callCtx, err)
			return nil, nil, &f
		}
		body, err := readBody(resp, sk.MaxResponseBytes)
		if err != nil {
			f := sk.bodyFailure(parent, callCtx, err)
			return nil, nil, &f
		}
		return resp, body, nil
	}
}

// wait is the pause before attempt+1: backoff doubled after each attempt,
// or the answer's Retry-After (in seconds), at most maxBackoff.
func (p *retryPolicy) wait(attempt int, resp *http.Response) time.Duration {
	d := p.backoff << (attempt - 1)
	if d <= 0 || d > p.maxBackoff {
		d = p.maxBackoff
	}
	if resp != nil {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
			d = min(time.Duration(secs)*time.Second, p.maxBackoff)
		}
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// discard reads a little of an unwanted body, so the connection can be
// kept, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// rewind is req ready to be sent again, with a fresh body.
func rewind(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		r.Body, _ = req.GetBody() // bytes.Reader bodies: never fails
	}
	return r
}
