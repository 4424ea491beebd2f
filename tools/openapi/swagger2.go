package openapi

// Reading Swagger 2.0: the document is rewritten as the OpenAPI 3.0
// document it stands for, so that one generator reads both.

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// swagger2 is the OpenAPI 3.0 form of the Swagger 2.0 document d: host,
// basePath and schemes become a server; body and formData parameters a
// request body of the media types the operation consumes; responses'
// schemas the content of the types it produces; securityDefinitions
// securitySchemes. Definitions stay where they are, so that their $refs
// (#/definitions/…) still resolve. A $ref that leads nowhere is kept as it
// is, for the operation that holds it to fail alone.
func (d *document) swagger2() *yaml.Node {
	root := mappingNode("openapi", str("3.0.3"))
	for _, key := range []string{"info", "security", "definitions"} {
		if n := get(d.root, key); n != nil {
			root.Content = append(root.Content, str(key), n)
		}
	}
	if server := d.swagger2Server(); server != "" {
		root.Content = append(root.Content, str("servers"), &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{mappingNode("url", str(server))}})
	}
	paths := mappingNode()
	if in := get(d.root, "paths"); in != nil && in.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(in.Content); i += 2 {
			paths.Content = append(paths.Content, in.Content[i], d.swagger2PathItem(in.Content[i+1]))
		}
	}
	root.Content = append(root.Content, str("paths"), paths)
	schemes := mappingNode()
	if defs := get(d.root, "securityDefinitions"); defs != nil && defs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(defs.Content); i += 2 {
			schemes.Content = append(schemes.Content, defs.Content[i], swagger2Scheme(resolveAlias(defs.Content[i+1])))
		}
	}
	root.Content = append(root.Content, str("components"), mappingNode("securitySchemes", schemes))
	return root
}

// swagger2Server is the API's URL: https when the document lists it (or
// lists no scheme), else its first scheme; only basePath, relative, when it
// names no host; "" when neither.
func (d *document) swagger2Server() string {
	host, base := scalar(get(d.root, "host")), scalar(get(d.root, "basePath"))
	if host == "" {
		return base
	}
	scheme := "https"
	if list := get(d.root, "schemes"); list != nil && list.Kind == yaml.SequenceNode && len(list.Content) > 0 &&
		!slices.ContainsFunc(list.Content, func(n *yaml.Node) bool { return n.Value == "https" }) {
		scheme = list.Content[0].Value
	}
	return scheme + "://" + host + base
}

// swagger2PathItem rewrites a path item's operations, each with the path
// item's parameters merged into its own.
func (d *document) swagger2PathItem(n *yaml.Node) *yaml.Node {
	item, err := d.deref(n)
	if err != nil || item.Kind != yaml.MappingNode {
		return n
	}
	out := mappingNode()
	for i := 0; i+1 < len(item.Content); i += 2 {
		key := item.Content[i].Value
		if key != "trace" && !slices.Contains(methods, key) {
			continue
		}
		out.Content = append(out.Content, item.Content[i], d.swagger2Operation(resolveAlias(item.Content[i+1]), get(item, "parameters")))
	}
	return out
}

// swagger2Operation rewrites an operation.
func (d *document) swagger2Operation(op, shared *yaml.Node) *yaml.Node {
	out := mappingNode()
	for _, key := range []string{"operationId", "summary", "description", "tags", "security"} {
		if n := get(op, key); n != nil {
			out.Content = append(out.Content, str(key), n)
		}
	}
	consumes := d.mediaTypes(op, "consumes")
	params := &yaml.Node{Kind: yaml.SequenceNode}
	form, encoding := mappingNode(), mappingNode()
	var formRequired []string
	multipart, body := false, false
	for _, pn := range d.swagger2Parameters(shared, get(op, "parameters")) {
		p, err := d.deref(pn)
		if err != nil {
			params.Content = append(params.Content, pn) // fails again, for this operation alone
			continue
		}
		name := scalar(get(p, "name"))
		switch scalar(get(p, "in")) {
		case "body":
			rb := mappingNode("content", contentOf(consumes, get(p, "schema")))
			for _, key := range []string{"description", "required"} {
				if n := get(p, key); n != nil {
					rb.Content = append(rb.Content, str(key), n)
				}
			}
			out.Content = append(out.Content, str("requestBody"), rb)
			body = true
		case "formData":
			s := swagger2Schema(p)
			if n := get(p, "description"); n != nil {
				s.Content = append(s.Content, str("description"), n)
			}
			form.Content = append(form.Content, str(name), s)
			if f, ok := collectionFormat(p); ok {
				encoding.Content = append(encoding.Content, str(name), mappingNode("style", str(f.style), "explode", str(f.explode)))
			}
			if scalar(get(p, "required")) == "true" {
				formRequired = append(formRequired, name)
			}
			multipart = multipart || scalar(get(p, "type")) == "file"
		default:
			params.Content = append(params.Content, swagger2Parameter(p))
		}
	}
	if len(form.Content) > 0 {
		mediaType := "application/x-www-form-urlencoded"
		if multipart || slices.Contains(consumes, "multipart/form-data") && !slices.Contains(consumes, mediaType) {
			mediaType = "multipart/form-data"
		}
		s := mappingNode("type", str("object"), "properties", form)
		if len(formRequired) > 0 {
			s.Content = append(s.Content, str("required"), flowList(formRequired))
		}
		content := contentOf([]string{mediaType}, s)
		if len(encoding.Content) > 0 {
			media := content.Content[1]
			media.Content = append(media.Content, str("encoding"), encoding)
		}
		if body {
			var names []string
			for i := 0; i < len(form.Content); i += 2 {
				names = append(names, form.Content[i].Value)
			}
			d.converted[out] = append(d.converted[out], fmt.Sprintf("the operation has both a body parameter and formData parameters, which Swagger 2.0 forbids: "+
				"the body is sent, and the form fields %s are left out", bounded(strings.Join(names, ", "))))
		} else {
			out.Content = append(out.Content, str("requestBody"), mappingNode("content", content))
		}
	}
	if len(params.Content) > 0 {
		out.Content = append(out.Content, str("parameters"), params)
	}
	if responses := get(op, "responses"); responses != nil && responses.Kind == yaml.MappingNode {
		produces := d.mediaTypes(op, "produces")
		rs := mappingNode()
		for i := 0; i+1 < len(responses.Content); i += 2 {
			r, err := d.deref(responses.Content[i+1])
			if err != nil {
				rs.Content = append(rs.Content, responses.Content[i], responses.Content[i+1])
				continue
			}
			converted := mappingNode("description", str(scalar(get(r, "description"))))
			if s := get(r, "schema"); s != nil {
				converted.Content = append(converted.Content, str("content"), contentOf(produces, s))
			}
			rs.Content = append(rs.Content, responses.Content[i], converted)
		}
		out.Content = append(out.Content, str("responses"), rs)
	}
	return out
}

// swagger2Parameters are the path item's parameters and the operation's,
// the operation's winning (by name and place).
func (d *document) swagger2Parameters(shared, own *yaml.Node) []*yaml.Node {
	key := func(n *yaml.Node) string {
		p, err := d.deref(n)
		if err != nil {
			return ""
		}
		return scalar(get(p, "in")) + " " + scalar(get(p, "name"))
	}
	var out []*yaml.Node
	if own != nil && own.Kind == yaml.SequenceNode {
		out = append(out, own.Content...)
	}
	if shared != nil && shared.Kind == yaml.SequenceNode {
		for _, p := range shared.Content {
			if k := key(p); k == "" || !slices.ContainsFunc(out, func(o *yaml.Node) bool { return key(o) == k }) {
				out = append(out, p)
			}
		}
	}
	return out
}

// mediaTypes are the operation's consumes or produces, else the
// document's, else JSON.
func (d *document) mediaTypes(op *yaml.Node, key string) []string {
	list := get(op, key)
	if list == nil {
		list = get(d.root, key)
	}
	if list == nil {
		return []string{"application/json"}
	}
	var out []string
	for _, n := range list.Content {
		out = append(out, n.Value)
	}
	return out
}

// contentOf is a Content Object: each media type with schema.
func contentOf(mediaTypes []string, schema *yaml.Node) *yaml.Node {
	c := mappingNode()
	for _, mt := range mediaTypes {
		media := mappingNode()
		if schema != nil {
			media.Content = append(media.Content, str("schema"), schema)
		}
		c.Content = append(c.Content, str(mt), media)
	}
	return c
}

// swagger2SchemaKeys are the keys of a parameter that say its schema.
var swagger2SchemaKeys = []string{"type", "format", "items", "enum", "default", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "multipleOf"}

// swagger2Schema is the schema a parameter (or items) object says; a file
// is binary.
func swagger2Schema(p *yaml.Node) *yaml.Node {
	s := mappingNode()
	for _, key := range swagger2SchemaKeys {
		n := get(p, key)
		switch {
		case n == nil:
			continue
		case key == "type" && n.Value == "file":
			s.Content = append(s.Content, str("type"), str("string"), str("format"), str("binary"))
			continue
		case key == "format" && scalar(get(p, "type")) == "file":
			continue
		case key == "items":
			n = swagger2Schema(n)
		}
		s.Content = append(s.Content, str(key), n)
	}
	return s
}

// collectionFormats are the OpenAPI 3 style and explode of Swagger 2.0's
// collectionFormat (csv by default).
var collectionFormats = map[string]struct{ style, explode string }{
	"csv": {"form", "false"}, "ssv": {"spaceDelimited", "false"}, "pipes": {"pipeDelimited", "false"},
	"tsv": {"tabDelimited", "false"}, "multi": {"form", "true"},
}

// swagger2Parameter rewrites a path, query or header parameter.
func swagger2Parameter(p *yaml.Node) *yaml.Node {
	out := mappingNode()
	for _, key := range []string{"name", "in", "description", "required"} {
		if n := get(p, key); n != nil {
			out.Content = append(out.Content, str(key), n)
		}
	}
	out.Content = append(out.Content, str("schema"), swagger2Schema(p))
	if f, ok := collectionFormat(p); ok && scalar(get(p, "in")) == "query" {
		out.Content = append(out.Content, str("style"), str(f.style), str("explode"), str(f.explode))
	}
	return out
}

// collectionFormat is the style and explode of the list parameter p's
// collectionFormat (csv by default); false when p is no list.
func collectionFormat(p *yaml.Node) (struct{ style, explode string }, bool) {
	if scalar(get(p, "type")) != "array" {
		return collectionFormats[""], false
	}
	f, ok := collectionFormats[strings.ToLower(scalar(get(p, "collectionFormat")))]
	if !ok {
		f = collectionFormats["csv"]
	}
	return f, true
}

// swagger2Flows are the OpenAPI 3 names of Swagger 2.0's oauth2 flows.
var swagger2Flows = map[string]string{"application": "clientCredentials", "accessCode": "authorizationCode",
	"implicit": "implicit", "password": "password"}

// swagger2Scheme rewrites a security definition: basic is http basic, an
// oauth2 flow is under flows.
func swagger2Scheme(s *yaml.Node) *yaml.Node {
	switch scalar(get(s, "type")) {
	case "basic":
		return mappingNode("type", str("http"), "scheme", str("basic"))
	case "oauth2":
		flow := mappingNode()
		for _, key := range []string{"authorizationUrl", "tokenUrl", "scopes"} {
			if n := get(s, key); n != nil {
				flow.Content = append(flow.Content, str(key), n)
			}
		}
		name := swagger2Flows[scalar(get(s, "flow"))]
		if name == "" {
			return mappingNode("type", str("oauth2"))
		}
		return mappingNode("type", str("oauth2"), "flows", mappingNode(name, flow))
	}
	return s
}
