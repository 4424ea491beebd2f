package mapping

// How a query or a form body sends a value: OpenAPI's style and explode,
// for lists and objects, one encoder for both.

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// paramStyle is OpenAPI's style of a query parameter or a form field.
type paramStyle uint8

const (
	styleUnset paramStyle = iota // the default of where it is sent
	styleForm
	styleSpaceDelimited
	stylePipeDelimited
	styleDeepObject
)

var styleNames = [...]string{styleForm: "form", styleSpaceDelimited: "spaceDelimited",
	stylePipeDelimited: "pipeDelimited", styleDeepObject: "deepObject"}

// paramEncoding is an argument's style and explode, as declared.
type paramEncoding struct {
	style               paramStyle
	explode, explodeSet bool
	// keys are the only keys an exploded form object may send, its
	// argument's declared properties: the caller's data adds no parameter
	// the skill does not name.
	keys []string
}

// The most bytes a query and a form body the agent encodes may take,
// enforced as they are written: deepObject repeats each value's path, so
// a small value could make a large one.
const (
	maxQueryBytes = 1 << 20
	maxFormBytes  = 16 << 20
)

// resolve is the encoding with OpenAPI's defaults: unset, the style is
// unsetStyle; explode is true for form, false for the others.
func (e paramEncoding) resolve(unsetStyle paramStyle) paramEncoding {
	if e.style == styleUnset {
		e.style = unsetStyle
	}
	if !e.explodeSet {
		e.explode = e.style == styleForm || e.style == styleDeepObject
	}
	e.explodeSet = true
	return e
}

// formEncoding is how a form body sends the field v with the encoding
// declared: with no style, an object as deepObject (address[city]=Paris),
// as form APIs read nested fields, and a list as form (repeating the key
// when exploded).
func formEncoding(declared paramEncoding, v any) paramEncoding {
	if _, isMap := v.(map[string]any); isMap {
		return declared.resolve(styleDeepObject)
	}
	return declared.resolve(styleForm)
}

// argRef matches a template that is one argument, {args.name}.
var argRef = regexp.MustCompile(`^\s*args\.([A-Za-z_][A-Za-z0-9_]*)\s*$`)

// queryEncoding is how the query parameter of template t is sent: as the
// argument it is declares (form, exploded, unless it says otherwise; an
// exploded object sends only its declared properties). Any other value is
// a value or a list, repeating the name: an object no argument declares
// is refused, so that the caller's data adds no parameter the skill does
// not name.
func (l *loader) queryEncoding(t *template) paramEncoding {
	if l.schema != nil && len(t.parts) == 1 && t.parts[0].prog != nil {
		if m := argRef.FindStringSubmatch(t.parts[0].src); m != nil {
			if a := l.schema.find(m[1]); a != nil {
				e := a.encoding.resolve(styleForm)
				e.keys = a.propertyNames()
				return e
			}
		}
	}
	return paramEncoding{explode: true, explodeSet: true}
}

// formFields are the form fields named like a declared argument that says
// how it is sent; nil for none.
func (l *loader) formFields() map[string]paramEncoding {
	if l.schema == nil {
		return nil
	}
	var out map[string]paramEncoding
	for i := range l.schema.args {
		if a := &l.schema.args[i]; a.encoding.style != styleUnset || a.encoding.explodeSet {
			if out == nil {
				out = map[string]paramEncoding{}
			}
			e := a.encoding
			e.keys = a.propertyNames()
			out[a.name] = e
		}
	}
	return out
}

// paramEncoding reads an argument's style and explode.
func (l *loader) paramEncoding(nodes map[string]*yaml.Node, key string, a *argument) {
	if n := nodes["style"]; n != nil {
		s, _ := l.scalar(n, key+".style")
		i := slices.Index(styleNames[:], s)
		style := paramStyle(max(i, 0))
		switch {
		case s == "" || i <= 0:
			l.errorf(n, key+".style", "must be form, spaceDelimited, pipeDelimited or deepObject, not %q", s)
		case !a.hasType(argObject) && !a.hasType(argArray):
			l.errorf(n, key+".style", "is only for arguments of type object or array")
		case style == styleDeepObject && (!a.hasType(argObject) || a.hasType(argArray)):
			l.errorf(n, key+".style", "deepObject is only for arguments of type object")
		}
		a.encoding.style = style
	}
	if n := nodes["explode"]; n != nil {
		a.encoding.explode, a.encoding.explodeSet = l.boolean(n, key+".explode"), true
	}
	if e := a.encoding; e.style == styleForm && (e.explode || !e.explodeSet) && a.hasType(argObject) && len(a.propertyNames()) == 0 {
		l.errorf(nodes["style"], key+".style", "an exploded form object sends only its declared properties, and this one declares none: "+
			"declare its properties, or send it whole with explode: false or style: deepObject")
	}
}

// propertyNames are the names of a's declared properties.
func (a *argument) propertyNames() []string {
	if a.rules == nil {
		return nil
	}
	names := make([]string, len(a.rules.properties))
	for i := range a.rules.properties {
		names[i] = a.rules.properties[i].name
	}
	return names
}

// paramWriter appends parameters to a query or a form body, name=value
// pairs joined by '&', names and values escaped.
type paramWriter struct {
	b []byte
	// what names a parameter in messages: "query parameter", "form field".
	what string
	// taken are the names of the other parameters (unescaped), which an
	// exploded object may not add again.
	taken []string
	// limit is the most bytes b may hold (maxQueryBytes, maxFormBytes).
	limit int
}

// next starts a parameter, after the '&' that ends the one before.
func (w *paramWriter) next() {
	if len(w.b) > 0 {
		w.b = append(w.b, '&')
	}
}

// pair appends a parameter, its name and value escaped, or refuses it
// when it would pass the limit.
func (w *paramWriter) pair(name, value string) error {
	if len(w.b)+1+len(name)+1+len(value) > w.limit {
		return &inputError{fmt.Sprintf("the %ss would take more than %s", w.what, formatBytes(int64(w.limit)))}
	}
	w.next()
	w.b = append(w.b, name...)
	w.b = append(w.b, '=')
	w.b = append(w.b, value...)
	return nil
}

// param appends the parameter name (escaped) holding v, encoded as e
// says (resolved): a scalar is one pair; a list repeats the name
// (explode) or joins its values with the style's delimiter; an object is
// its keys as names (form, explode), name=key,value,… (not exploded), or
// name[key]=value, nested (deepObject). Nulls are left out.
func (w *paramWriter) param(name string, v any, e paramEncoding) error {
	if v == nil {
		return nil
	}
	if m, isMap := v.(map[string]any); isMap {
		return w.object(name, m, e)
	}
	if s, ok := scalarString(v); ok {
		return w.pair(name, url.QueryEscape(s))
	}
	if e.style == styleDeepObject || e.explode {
		return forEach(v, func(x any) error {
			if x == nil {
				return nil
			}
			s, ok := scalarString(x)
			if !ok {
				return w.refuse(name, x)
			}
			return w.pair(name, url.QueryEscape(s))
		})
	}
	var joined []byte
	n := 0
	err := forEach(v, func(x any) error {
		if x == nil {
			return nil
		}
		s, ok := scalarString(x)
		if !ok {
			return w.refuse(name, x)
		}
		joined, n = joinValue(joined, n, s, e.style), n+1
		return nil
	})
	if err == nil && n > 0 {
		err = w.pair(name, string(joined))
	}
	return err
}

func (w *paramWriter) refuse(name string, x any) error {
	return &inputError{fmt.Sprintf("the %s %s holds a %s, not a value or a list of values", w.what, shorten(name), kindName(x))}
}

// joinValue appends the n-th value (from 0) to a parameter whose values
// share it, after the style's delimiter.
func joinValue(joined []byte, n int, s string, style paramStyle) []byte {
	if n > 0 {
		switch style {
		case styleSpaceDelimited:
			joined = append(joined, "%20"...)
		case stylePipeDelimited:
			joined = append(joined, '|')
		default:
			joined = append(joined, ',')
		}
	}
	return append(joined, url.QueryEscape(s)...)
}

func (w *paramWriter) object(name string, m map[string]any, e paramEncoding) error {
	switch {
	case e.style == styleUnset:
		return w.refuse(name, m)
	case e.style == styleDeepObject:
		return w.deep(name, name, m, 0)
	case e.explode: // form: each declared key is a parameter of its own, holding a value or a list
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch {
			case !slices.Contains(e.keys, k):
				return &inputError{fmt.Sprintf("the %s %s holds the key %s, which its argument does not declare", w.what, name, shorten(k))}
			case slices.Contains(w.taken, k):
				return &inputError{fmt.Sprintf("the %s %s holds the key %s, which is another %s", w.what, name, k, w.what)}
			}
			if err := w.param(url.QueryEscape(k), m[k], paramEncoding{explode: true}); err != nil {
				return err
			}
		}
		return nil
	}
	var joined []byte
	n := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == nil {
			continue
		}
		s, ok := scalarString(m[k])
		if !ok {
			return &inputError{fmt.Sprintf("the %s %s holds %s, a %s, not a value", w.what, name, shorten(k), kindName(m[k]))}
		}
		joined, n = joinValue(joinValue(joined, n, k, e.style), n+1, s, e.style), n+2
	}
	if n > 0 {
		return w.pair(name, string(joined))
	}
	return nil
}

// deep appends v, at depth levels below the parameter field, under name
// as deepObject does: an object's keys in brackets, a list's indexes in
// brackets, nested at most MaxArgumentDepth levels deep; any other value that
// is not a scalar (a file's bytes, a time) is refused.
func (w *paramWriter) deep(field, name string, v any, depth int) error {
	if v == nil {
		return nil
	}
	if s, ok := scalarString(v); ok {
		return w.pair(name, url.QueryEscape(s))
	}
	m, isMap := v.(map[string]any)
	isList := dataAs(v, argArray) != nil
	switch {
	case !isMap && !isList:
		return w.refuse(name, v)
	case depth == MaxArgumentDepth:
		return &inputError{fmt.Sprintf("the %s %s nests more than %d levels deep", w.what, field, MaxArgumentDepth)}
	case isMap:
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := w.deep(field, name+"["+url.QueryEscape(k)+"]", m[k], depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	i := 0
	return forEach(v, func(x any) error {
		err := w.deep(field, name+"["+strconv.Itoa(i)+"]", x, depth+1)
		i++
		return err
	})
}
