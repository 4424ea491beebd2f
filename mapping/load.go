package mapping

// Loading a skills file: the entry points, the file's top level and its
// upstream section.

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
	"gopkg.in/yaml.v3"
)

// Load reads and parses the skills file at path.
func Load(path string, opts Options) (*Skills, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mapping: reading skills: %w", err)
	}
	return Parse(path, src, opts)
}

// Parse parses a skills file; filename names it in errors. Every mistake
// found is reported, each as a *ConfigError, joined with errors.Join.
func Parse(filename string, src []byte, opts Options) (*Skills, error) {
	l := &loader{file: filename, opts: &opts}
	l.c.maxNodes = opts.MaxExpressionNodes
	if l.c.maxNodes == 0 {
		l.c.maxNodes = DefaultMaxExpressionNodes
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		l.yamlError(err)
		return nil, errors.Join(l.errs...)
	}
	s := l.document(&doc)
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	s.memoryBudget = opts.MaxExpressionMemory
	if s.memoryBudget == 0 {
		s.memoryBudget = DefaultMaxExpressionMemory
	}
	return s, nil
}

// document reads the whole file.
func (l *loader) document(doc *yaml.Node) *Skills {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		l.errorAt(0, "", "the file is empty")
		return nil
	}
	root := resolve(doc.Content[0])
	var upNode, configNode, skillsNode *yaml.Node
	l.fields(root, "", []string{"upstream", "config", "skills"}, func(name string, v *yaml.Node) {
		switch name {
		case "upstream":
			upNode = v
		case "config":
			configNode = v
		case "skills":
			skillsNode = v
		}
	})
	if root.Kind != yaml.MappingNode {
		return nil
	}
	up := l.upstream(upNode, root)
	var config map[string]any
	if configNode != nil {
		config = l.constants(configNode, "config")
	}
	if skillsNode == nil {
		l.errorf(root, "skills", "is required: list at least one skill")
		return nil
	}
	if skillsNode.Kind != yaml.SequenceNode || len(skillsNode.Content) == 0 {
		l.errorf(skillsNode, "skills", "must be a list of at least one skill")
		return nil
	}
	s := &Skills{byID: make(map[string]*Skill, len(skillsNode.Content)), up: up.up}
	firstLine := map[string]int{}
	for i, n := range skillsNode.Content {
		n = resolve(n)
		sk := l.readSkill(i, n, up, config)
		if sk == nil {
			continue
		}
		if first, dup := firstLine[sk.ID]; dup {
			l.skill, l.prefix = sk.ID, ""
			l.errorf(n, "id", "repeated skill id (first at line %d)", first)
			l.skill = ""
			continue
		}
		firstLine[sk.ID] = n.Line
		sk.set = s
		s.skills = append(s.skills, sk)
		s.byID[sk.ID] = sk
		if sk.match != nil {
			s.matching = append(s.matching, sk)
		}
	}
	s.matchNeeds = l.matchNeeds
	if up.up != nil {
		up.up.transport = l.opts.Transport
		if up.up.transport == nil {
			up.up.transport = NewUpstreamTransport(up.maxIdle)
		}
		if up.tokens != nil {
			up.up.tokens = up.tokens
			up.up.transport = &upstreamauth.Transport{Base: up.up.transport, Client: up.tokens}
		}
		for _, sk := range s.skills {
			sk.transport = up.up.transport
			if l.opts.WrapTransport != nil {
				sk.transport = l.opts.WrapTransport(sk.ID, sk.transport)
			}
		}
	}
	return s
}

func (l *loader) upstream(n, root *yaml.Node) upstreamConfig {
	cfg := upstreamConfig{timeout: DefaultTimeout, maxBytes: DefaultMaxResponseBytes, maxFile: DefaultMaxFileBytes,
		maxIdle: DefaultMaxIdleConnsPerHost}
	var urlNode *yaml.Node
	if n != nil {
		l.c.needs = 0
		l.fields(n, "upstream", []string{"url", "headers", "oauth2", "timeout", "max_response_bytes", "max_file_bytes", "max_idle_conns_per_host"},
			func(name string, v *yaml.Node) {
				switch name {
				case "url":
					urlNode = v
				case "oauth2":
					cfg.tokens = l.oauth2(v)
				case "headers":
					cfg.headers = l.headers(v, "upstream.headers", true)
				case "timeout":
					cfg.timeout = l.duration(v, "upstream.timeout")
				case "max_response_bytes":
					cfg.maxBytes = l.size(v, "upstream.max_response_bytes")
				case "max_file_bytes":
					cfg.maxFile = l.size(v, "upstream.max_file_bytes")
				case "max_idle_conns_per_host":
					cfg.maxIdle = l.positiveInt(v, "upstream.max_idle_conns_per_host")
				}
			})
		cfg.needs = l.c.needs
		if cfg.tokens != nil && slices.ContainsFunc(cfg.headers, func(h headerDef) bool { return h.name == "Authorization" }) {
			l.errorf(n, "upstream.headers.Authorization", "is set by upstream.oauth2: keep one")
		}
	}
	if l.opts.UpstreamURL != "" {
		up, err := parseBaseURL(l.opts.UpstreamURL)
		if err != nil {
			l.errorAt(0, "", "the upstream URL given to the module "+err.Error())
		}
		cfg.up = up
		return cfg
	}
	if urlNode == nil {
		at := n
		if at == nil {
			at = root
		}
		l.errorf(at, "upstream.url", "is required (or set the module's upstream URL)")
		return cfg
	}
	s, ok := l.envString(urlNode, "upstream.url")
	if !ok {
		return cfg
	}
	up, err := parseBaseURL(s)
	if err != nil {
		l.errorf(urlNode, "upstream.url", "%s", err.Error())
	}
	cfg.up = up
	return cfg
}

// parseBaseURL checks the upstream's base URL. Its messages do not repeat
// the URL, which may hold a value from the environment.
func parseBaseURL(s string) (*upstream, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, errors.New("is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("must be an absolute http:// or https:// URL")
	case u.Host == "" || u.Opaque != "":
		return nil, errors.New("must name a host, as in http://127.0.0.1:8080")
	case u.User != nil:
		return nil, errors.New("may not hold a user or password: send credentials in upstream.headers")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errors.New("may not have a query or a fragment")
	}
	return &upstream{
		scheme: u.Scheme, host: u.Host, origin: origin(u),
		basePath: strings.TrimSuffix(u.Path, "/"), baseRawPath: strings.TrimSuffix(u.EscapedPath(), "/"),
	}, nil
}
