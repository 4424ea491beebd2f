package openapi_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tools/dryrun"
	"github.com/caddy-a2a/caddy-a2a/tools/openapi"
)

var update = flag.Bool("update", false, "rewrite the golden skills files")

// anyEnv sets every environment variable a generated file reads.
func anyEnv(string) (string, bool) { return "secret-value", true }

// generateFile generates the skills file of the document at path.
func generateFile(t *testing.T, path string, opts openapi.Options) *openapi.Result {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := openapi.Generate(path, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The generated files are compared with golden files, and load.
func TestGenerateGolden(t *testing.T) {
	tests := []struct {
		name, spec string
		opts       openapi.Options
		env        []string
		notes      int
	}{
		{name: "demoapi", spec: "../../examples/demoapi/openapi.yaml", env: []string{"DEMO_API_KEY"}},
		{name: "store-3.1", spec: "testdata/store-3.1.yaml", env: []string{"BEARER_AUTH", "API_KEY_QUERY"}, notes: 3},
		{name: "petstore-3.0", spec: "testdata/petstore-3.0.json", env: []string{"PETSTORE_AUTH", "API_KEY"}, notes: 2},
		{name: "swagger-2.0", spec: "testdata/swagger-2.0.yaml", env: []string{"API_KEY", "BASIC_AUTH"}},
		{name: "petstore-picked", spec: "testdata/petstore-3.0.json",
			opts: openapi.Options{Operations: []string{"getPetById", "get /pet/findByStatus"}, UpstreamURL: "https://petstore3.swagger.io/api/v3"},
			env:  []string{"PETSTORE_AUTH", "API_KEY"}, notes: 1},
		{name: "rich-args", spec: "testdata/rich-args.yaml", notes: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := generateFile(t, tt.spec, tt.opts)
			skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
			if err != nil {
				t.Fatalf("the generated file does not load: %v\n%s", err, r.YAML)
			}
			defer skills.Close()
			var ids []string
			for _, sk := range skills.All() {
				ids = append(ids, sk.ID)
			}
			if !slices.Equal(ids, r.Skills) {
				t.Errorf("skills %v, Result.Skills %v", ids, r.Skills)
			}
			if !slices.Equal(r.Env, tt.env) {
				t.Errorf("env %v, want %v", r.Env, tt.env)
			}
			if len(r.Notes) != tt.notes {
				t.Errorf("%d notes, want %d: %q", len(r.Notes), tt.notes, r.Notes)
			}
			golden := filepath.Join("testdata", "golden", tt.name+".skills.yaml")
			if *update {
				if err := os.WriteFile(golden, r.YAML, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestGenerateGolden -update writes it)", err)
			}
			if string(r.YAML) != string(want) {
				t.Errorf("the skills file differs from %s (-update rewrites it):\n%s", golden, r.YAML)
			}
		})
	}
}

// The generated skills send the requests the document describes.
func TestGeneratedRequests(t *testing.T) {
	tests := []struct {
		spec    string
		message string
		want    []string // lines of the dry run's report
		absent  []string
	}{
		{spec: "../../examples/demoapi/openapi.yaml",
			message: `{"parts": [{"data": {"item": "widget", "quantity": 3}}], "metadata": {"skill": "placeOrder"}}`,
			want: []string{"POST http://127.0.0.1:9090/orders", "Content-Type: application/json", `{"item":"widget","quantity":3}`,
				"X-Api-Key: ***"}},
		{spec: "../../examples/demoapi/openapi.yaml",
			message: `{"parts": [{"data": {"q": "caddy"}}], "metadata": {"skill": "searchDocs"}}`,
			want:    []string{"GET http://127.0.0.1:9090/search?q=caddy&limit=5"}},
		{spec: "../../examples/demoapi/openapi.yaml",
			message: `{"parts": [{"data": {"rating": 4}}], "metadata": {"skill": "sendFeedback"}}`,
			want:    []string{"POST http://127.0.0.1:9090/feedback", "Content-Type: application/x-www-form-urlencoded", "rating=4"}},
		{spec: "../../examples/demoapi/openapi.yaml",
			message: `{"parts": [{"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"}, {"data": {"title": "Notes"}}],
				"metadata": {"skill": "uploadDocument"}}`,
			want: []string{"POST http://127.0.0.1:9090/documents", "Content-Type: multipart/form-data; boundary=",
				`Content-Disposition: form-data; name="file"; filename="a.txt"`, "hello", `name="title"`}},
		{spec: "../../examples/demoapi/openapi.yaml",
			message: `{"parts": [{"data": {"tag": ["a", "b"]}}], "metadata": {"skill": "echo"}}`,
			want:    []string{"GET http://127.0.0.1:9090/echo?tag=a&tag=b"}},
		{spec: "testdata/store-3.1.yaml",
			message: `{"parts": [{"data": {"store_id": "s 1", "name": "Teapot", "price": 9.5}}], "metadata": {"skill": "post_stores_store-id_items"}}`,
			want: []string{"POST https://store.example.com/v2/stores/s%201/items?api_key=***", "Authorization: Bearer ***",
				"Content-Type: application/vnd.store+json", `{"name":"Teapot","price":9.5}`}},
		{spec: "testdata/store-3.1.yaml",
			message: `{"parts": [{"data": {"store_id": "x", "tags": ["a", "b"], "filter": {"color": "red"}, "X_Request_ID": "0b9f1c3e-2a4d-4f7a-9c1e-5d6b7a8c9d0e"}}], "metadata": {"skill": "list_items"}}`,
			want:    []string{"GET https://store.example.com/v2/stores/x/items?tags=a,b&filter[color]=red&sort=price", "X-Request-Id: 0b9f1c3e-2a4d-4f7a-9c1e-5d6b7a8c9d0e"},
			absent:  []string{"X-Request-Id: ***"}},
		// A credential the operation also declares as a parameter is sent
		// once, in the query as in the headers.
		{spec: "testdata/query-key.yaml",
			message: `{"parts": [{"data": {"id": "b1", "fields": "name"}}], "metadata": {"skill": "getBoard"}}`,
			want:    []string{"GET https://boards.example.test/1/boards/b1?fields=name&key=***", "X-Token: ***"}},
		// Bodies of 250 optional fields stay within the expression size
		// limit: a form, whose encoding leaves out nulls, and JSON.
		{spec: "testdata/big-bodies.yaml",
			message: `{"parts": [{"data": {"AccountSid": "AC1", "Option007": "x", "Option250": "y"}}], "metadata": {"skill": "createCall"}}`,
			want:    []string{"POST https://calls.example.test/accounts/AC1/calls", "\n  Option007=x&Option250=y\n"}},
		{spec: "testdata/big-bodies.yaml",
			message: `{"parts": [{"data": {"AccountSid": "AC1", "option_002": 2, "option_249": 0}}], "metadata": {"skill": "createMessage"}}`,
			want:    []string{"POST https://calls.example.test/accounts/AC1/messages", "\n  {\"option-002\":2,\"option-249\":0}\n"}},
		// Swagger 2.0: host, basePath and schemes, collection formats,
		// #/parameters and #/definitions, body and formData parameters.
		{spec: "testdata/swagger-2.0.yaml",
			message: `{"parts": [{"data": {"warehouse": "w 1", "tags": ["a", "b"], "status": ["new", "sold"], "fields": ["sku", "name"]}}], "metadata": {"skill": "listItems"}}`,
			want:    []string{"GET https://inventory.example.test/api/warehouses/w%201/items?tags=a,b&status=new&status=sold&limit=20&fields=sku%09name\n", "X-Api-Key: ***"}},
		{spec: "testdata/swagger-2.0.yaml",
			message: `{"parts": [{"data": {"warehouse": "w1", "sku": "A-100", "price": 2.5}}], "metadata": {"skill": "addItem"}}`,
			want:    []string{"POST https://inventory.example.test/api/warehouses/w1/items\n", "Content-Type: application/json", `{"price":2.5,"sku":"A-100"}`}},
		{spec: "testdata/swagger-2.0.yaml",
			message: `{"parts": [{"raw": "aGVsbG8=", "filename": "p.png", "mediaType": "image/png"}, {"data": {"warehouse": "w1", "id": 7, "caption": "Front"}}],
				"metadata": {"skill": "uploadPhoto"}}`,
			want: []string{"POST https://inventory.example.test/api/warehouses/w1/items/7/photo\n", "Content-Type: multipart/form-data; boundary=",
				`Content-Disposition: form-data; name="photo"; filename="p.png"`, `name="caption"`}},
		{spec: "testdata/swagger-2.0.yaml",
			message: `{"parts": [{"data": {"sku": "A-100", "quantity": 3}}], "metadata": {"skill": "restock"}}`,
			want: []string{"POST https://inventory.example.test/api/restock\n", "Authorization: Basic ***", "Content-Type: application/x-www-form-urlencoded",
				"quantity=3&sku=A-100"}},
		{spec: "testdata/big-bodies.yaml",
			message: `{"parts": [{"data": {"AccountSid": "AC1", "CallSid": "CA1", "Status_Callback": "https://hooks.example.test/c"}}], "metadata": {"skill": "updateCall"}}`,
			want:    []string{"POST https://calls.example.test/accounts/AC1/calls/CA1", "\n  Status-Callback=https%3A%2F%2Fhooks.example.test%2Fc\n"}},
		// A Swagger 2.0 form field's collectionFormat is its encoding.
		{spec: "testdata/swagger-2.0-form.yaml",
			message: `{"parts": [{"data": {"id": "d1", "name": "Rex", "nick": ["a", "b"], "toys": ["x", "y"], "owners": ["p", "q"]}}], "metadata": {"skill": "renameDog"}}`,
			want:    []string{"PUT https://kennel.example.test/v1/dogs/d1\n", "\n  name=Rex&nick=a,b&owners=p&owners=q&toys=x|y\n"}},
		// An object in a multipart body is sent as JSON text, which
		// mapping's multipart encoding refuses as a map that is no file.
		{spec: "testdata/body-notes.yaml",
			message: `{"parts": [{"data": {"meta": {"device": "CT-2"}}}], "metadata": {"skill": "uploadScan"}}`,
			want: []string{"POST https://clinic.example.test/scans\n", "Content-Type: multipart/form-data; boundary=",
				"Content-Disposition: form-data; name=\"meta\"\n  \n  {\n    \"device\": \"CT-2\"\n  }\n"}},
		// So is one in a multipart body of 250 fields, built from a list
		// of their names.
		{spec: "testdata/big-bodies.yaml",
			message: `{"parts": [{"data": {"AccountSid": "AC1", "option_002": 2, "media_meta": {"k": "v"}}}], "metadata": {"skill": "createMedia"}}`,
			want: []string{"POST https://calls.example.test/accounts/AC1/media\n", "Content-Disposition: form-data; name=\"option-002\"\n  \n  2\n",
				"Content-Disposition: form-data; name=\"media-meta\"\n  \n  {\n    \"k\": \"v\"\n  }\n"}},
		// A query string in a path key is split into query parameters, or
		// left out (with a note); never sent as an encoded "?".
		{spec: "testdata/path-query.yaml",
			message: `{"parts": [{"data": {"lat": 48.8, "lon": 2.3, "area": "NE"}}], "metadata": {"skill": "activeAlerts"}}`,
			want:    []string{"GET https://alerts.example.test/alerts?lat=48.8&active=true&lon=2.3&area=NE\n"}, absent: []string{"%3F"}},
		{spec: "testdata/path-query.yaml",
			message: `{"parts": [{"data": {}}], "metadata": {"skill": "zones"}}`,
			want:    []string{"GET https://alerts.example.test/zones\n"}, absent: []string{"%3F"}},
		// Lists in a path as OpenAPI's simple style writes them, and in a
		// header as HTTP lists them; an object as the text the caller
		// writes; label and matrix styles' prefixes.
		{spec: "testdata/path-styles.yaml",
			message: `{"parts": [{"data": {"ids": [3, 4], "X_Tags": ["a", "b"], "X_Point": "x,1,y,2"}}], "metadata": {"skill": "getSwatches"}}`,
			want:    []string{"GET https://palette.example.test/v1/swatches/3,4\n", "X-Point: x,1,y,2", "X-Tags: a\n  X-Tags: b\n"}},
		{spec: "testdata/path-styles.yaml",
			message: `{"parts": [{"data": {"rgb": "R=100,G=200", "shades": ["light", "dark"], "depth": 8, "layers": ["a", "b"], "steps": "1.2.3"}}], "metadata": {"skill": "getColor"}}`,
			want:    []string{"GET https://palette.example.test/v1/colors/R=100%2CG=200/.light,dark/;depth=8/;layers=a,b/.1.2.3\n"}},
		// Objects and lists in a query, as each parameter's style and
		// explode say.
		{spec: "testdata/rich-args.yaml",
			message: `{"parts": [{"data": {"filter": {"city": "Paris", "vip": true}, "fields": ["name", "email"], "ids": [1, 2],
				"range": {"from": 1, "to": 5}, "page": {"size": 10}}}], "metadata": {"skill": "searchCustomers"}}`,
			want: []string{"GET https://shop.example.test/v1/customers/search?filter[city]=Paris&filter[vip]=true&fields=name,email&ids=1|2&range=from,1,to,5&size=10\n"}},
		// Nested form fields are sent: an object as deepObject, a union's
		// object too, a list as its encoding says.
		{spec: "testdata/rich-args.yaml",
			message: `{"parts": [{"data": {"amount": 100, "address": {"city": "Paris", "geo": {"lat": 48.8}}, "metadata": {"order": "7"},
				"tags": ["a", "b"], "expand": ["customer", "invoice"]}}], "metadata": {"skill": "createCharge"}}`,
			want: []string{"POST https://shop.example.test/v1/charges\n", "Content-Type: application/x-www-form-urlencoded",
				"\n  address[city]=Paris&address[geo][lat]=48.8&amount=100&expand=customer,invoice&metadata[order]=7&tags=a&tags=b\n"}},
		// A union keeps each of its types: the same field as a string.
		{spec: "testdata/rich-args.yaml",
			message: `{"parts": [{"data": {"amount": 100, "metadata": ""}}], "metadata": {"skill": "createCharge"}}`,
			want:    []string{"\n  amount=100&metadata=\n"}},
		{spec: "testdata/rich-args.yaml",
			message: `{"parts": [{"data": {"name": "Ada", "email": "ada@example.test", "metadata": {"k": "v"}, "ref": 7,
				"address": {"city": "Paris", "zip": "75001"}, "phones": ["+331"]}}], "metadata": {"skill": "createCustomer"}}`,
			want: []string{"POST https://shop.example.test/v1/customers\n",
				`{"address":{"city":"Paris","zip":"75001"},"email":"ada@example.test","metadata":{"k":"v"},"name":"Ada","phones":["+331"],"ref":7}`}},
		// The document's rules are checked before any request: the caller
		// is asked again, and nothing is sent.
		{spec: "testdata/rich-args.yaml",
			message: `{"parts": [{"data": {"name": "Ada", "email": "ada@example.test", "code": "abc", "age": 12, "born": "2026-02-30",
				"address": {"zip": "75001"}, "phones": ["0033 1"]}}], "metadata": {"skill": "createCustomer"}}`,
			want: []string{"Outcome: input-required", "code: it must match the pattern ^[A-Z]{3}$", "age: it must be at least 18",
				"born: it must be a date", "address: it lacks address.city", "phones: it holds phones[0], which must match"},
			absent: []string{"POST https://"}},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			r := generateFile(t, tt.spec, openapi.Options{})
			path := filepath.Join(t.TempDir(), "skills.yaml")
			if err := os.WriteFile(path, r.YAML, 0o644); err != nil {
				t.Fatal(err)
			}
			msg := strings.Replace(tt.message, `{"parts"`, `{"role": "ROLE_USER", "messageId": "m", "parts"`, 1)
			sample, err := dryrun.ParseSampleMessage([]byte(msg), "1.0")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := dryrun.Run(context.Background(), path, mapping.Options{LookupEnv: anyEnv}, dryrun.Input{Sample: sample})
			if err != nil {
				t.Fatal(err)
			}
			var report strings.Builder
			if err := rep.Write(&report); err != nil {
				t.Fatal(err)
			}
			out := report.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the request lacks %q:\n%s", w, out)
				}
			}
			for _, a := range append(tt.absent, "secret-value") {
				if strings.Contains(out, a) {
					t.Errorf("the report shows %q:\n%s", a, out)
				}
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name, src string
		opts      openapi.Options
		want      string
	}{
		{name: "swagger 1.2", src: "swagger: '1.2'\npaths: {}", want: `want a Swagger 2.0 document (swagger: "2.0"), not "1.2"`},
		{name: "swagger 2 without operations", src: "swagger: '2.0'\npaths: {}", want: "the document has no operations"},
		{name: "not openapi 3", src: "openapi: 2.5.0\npaths: {}", want: `want an OpenAPI 3 document (openapi: 3.x) or Swagger 2.0, not "2.5.0"`},
		{name: "not a mapping", src: "- a\n- b", want: "not an OpenAPI document"},
		{name: "not YAML", src: "openapi: [3", want: "spec.yaml"},
		{name: "no paths", src: "openapi: 3.0.0", want: "the document has no paths"},
		{name: "no operations", src: "openapi: 3.0.0\npaths: {/a: {summary: x}}", want: "the document has no operations"},
		{name: "unknown operation", src: "openapi: 3.0.0\npaths: {/a: {get: {operationId: a}, post: {}}}",
			opts: openapi.Options{Operations: []string{"b", "PUT /a"}}, want: `no operation "b", "PUT /a"; the operations are: a, POST /a`},
		{name: "unknown operation among many", src: "openapi: 3.0.0\npaths: {/a: {get: {operationId: a}}, /b: {get: {operationId: b}}, /c: {get: {operationId: c}}, /d: {get: {operationId: d}}, /e: {get: {operationId: e}}, /f: {get: {operationId: f}}, /g: {get: {operationId: g}}, /h: {get: {operationId: h}}, /i: {get: {operationId: i}}, /j: {get: {operationId: j}}, /k: {get: {operationId: k}}, /l: {get: {operationId: l}}}",
			opts: openapi.Options{Operations: []string{"z"}}, want: `no operation "z"; the operations are: a, b, c, d, e, f, g, h, i, j (and 2 more operations)`},
		{name: "external ref", src: "openapi: 3.0.0\npaths: {/a: {get: {parameters: [{$ref: 'common.yaml#/p'}]}}}",
			want: "only $refs within the document"},
		{name: "ref loop", src: "openapi: 3.0.0\npaths: {/a: {$ref: '#/paths/~1b'}, /b: {$ref: '#/paths/~1a'}}",
			want: "too many $refs in a row"},
		{name: "dangling ref", src: "openapi: 3.0.0\npaths: {/a: {get: {requestBody: {$ref: '#/components/requestBodies/X'}}}}",
			want: `$ref "#/components/requestBodies/X": nothing at "components"`},
		{name: "bad upstream", src: "openapi: 3.0.0\npaths: {/a: {get: {}}}", opts: openapi.Options{UpstreamURL: "api.test"},
			want: "the upstream URL must be an absolute http"},
		{name: "unclosed path hole", src: "openapi: 3.0.0\npaths: {'/a/{id': {get: {}}}", want: "without its }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openapi.Generate("spec.yaml", []byte(tt.src), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one that mentions %q", err, tt.want)
			}
		})
	}
}

// Names that are not valid ids or argument names are made valid, and
// stay unique.
func TestGenerateNames(t *testing.T) {
	src := `openapi: 3.0.0
info: {title: Names}
servers: [{url: "http://api.test/"}]
paths:
  /things/{thing.id}:
    get:
      operationId: "get thing!"
      parameters:
        - {name: thing.id, in: path, required: true, schema: {type: string}}
        - {name: 2fa, in: query, schema: {type: boolean}}
        - {name: "page[size]", in: query, schema: {type: integer, default: 20, maximum: 100}}
    delete:
      operationId: "get thing?"
  /things:
    post:
      requestBody:
        content:
          application/json:
            schema: {type: array, items: {type: string}}
`
	r, err := openapi.Generate("names.yaml", []byte(src), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"get_thing", "get_thing_2", "post_things"}; !slices.Equal(r.Skills, want) {
		t.Errorf("skills %v, want %v", r.Skills, want)
	}
	for _, want := range []string{"thing_id: # path thing.id", "_2fa: # query 2fa", "page_size: # query page[size]",
		"path: /things/{args.thing_id}", "page[size]: '{args.page_size}'", "maximum: 100\n",
		"body: args.body", "url: http://api.test\n"} {
		if !strings.Contains(string(r.YAML), want) {
			t.Errorf("the file lacks %q:\n%s", want, r.YAML)
		}
	}
}

func TestOperations(t *testing.T) {
	src, err := os.ReadFile("testdata/store-3.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := openapi.Operations("store.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []openapi.Operation{
		{ID: "list items", Method: "GET", Path: "/stores/{store-id}/items", Summary: "List items"},
		{Method: "POST", Path: "/stores/{store-id}/items", Summary: "Add an item"},
		{ID: "putPhoto", Method: "PUT", Path: "/stores/{store-id}/items/{itemId}/photo"},
		{Method: "HEAD", Path: "/ping"},
	}
	if !slices.Equal(ops, want) {
		t.Errorf("operations\n got %+v\nwant %+v", ops, want)
	}
	src, err = os.ReadFile("testdata/swagger-2.0.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ops, err = openapi.Operations("swagger-2.0.yaml", src); err != nil || len(ops) != 4 || ops[0] != (openapi.Operation{ID: "listItems", Method: "GET", Path: "/warehouses/{warehouse}/items", Summary: "List items"}) {
		t.Errorf("the Swagger 2.0 document's operations: %+v, %v", ops, err)
	}

}

// An operation that cannot be made a skill that loads is left out, with
// its reason on one bounded line that names no line of the unwritten file;
// the file holds the others, and loads.
func TestGenerateLeavesOut(t *testing.T) {
	r := generateFile(t, "testdata/left-out.yaml", openapi.Options{})
	if want := []string{"listThings"}; !slices.Equal(r.Skills, want) {
		t.Errorf("skills %v, want %v", r.Skills, want)
	}
	skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
	if err != nil {
		t.Fatalf("the generated file does not load: %v\n%s", err, r.YAML)
	}
	skills.Close()
	want := []struct{ op, reason string }{
		{"badRef", `parameters: $ref "#/components/parameters/ThisParameterIsNotDeclared`},
		{"sameHeaderThrice", "request.headers.x-id: repeated header (header names ignore case) (and 1 more mistake)"},
	}
	if len(r.LeftOut) != len(want) {
		t.Fatalf("left out %+v, want %d", r.LeftOut, len(want))
	}
	for i, w := range want {
		got := r.LeftOut[i]
		if got.Operation != w.op || !strings.HasPrefix(got.Reason, w.reason) {
			t.Errorf("left out %+v, want %s: %s…", got, w.op, w.reason)
		}
		if n := len([]rune(got.Reason)); n > 350 || strings.Contains(got.Reason, "line") || strings.Contains(got.Reason, "\n") {
			t.Errorf("the reason is %d characters, or names a line: %q", n, got.Reason)
		}
		note := w.op + " (GET "
		if !strings.Contains(string(r.YAML), "#   "+note) || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, note) }) {
			t.Errorf("neither the file nor the notes say %s is left out:\n%s\n%q", w.op, r.YAML, r.Notes)
		}
	}
}

// A form body is a map of its fields, without the filter a JSON body
// needs: its encoding leaves out the fields not given.
func TestGenerateFormBody(t *testing.T) {
	r := generateFile(t, "testdata/big-bodies.yaml", openapi.Options{Operations: []string{"updateCall"}})
	want := `      body_format: form
      body: |
        {
          "Status": args.Status,
          "Status-Callback": args.Status_Callback
        }
`
	if !strings.Contains(string(r.YAML), want) {
		t.Errorf("the file lacks\n%s\nin\n%s", want, r.YAML)
	}
}

// The notes say what an operator must know, and nothing else.
func TestGenerateNotes(t *testing.T) {
	r := generateFile(t, "testdata/noise.yaml", openapi.Options{})
	want := []string{
		"otherServer: the operation names its own server, https://uploads.example.test; the skill calls upstream.url",
		"noSchema: the request body has no schema: the argument body is taken as an object",
	}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes\n%q\nwant\n%q", r.Notes, want)
	}
}

// A path or header parameter that a skill cannot build as its style says
// is text the caller writes, in the form its description gives.
func TestGeneratePathStyles(t *testing.T) {
	r := generateFile(t, "testdata/path-styles.yaml", openapi.Options{})
	want := []string{
		`getSwatches: the header parameter X-Point is an object (simple style), which a skill does not build: it is taken as text, written as "R,100,G,200" for {R: 100, G: 200}`,
		`getColor: the path parameter rgb is an object (simple style), which a skill does not build: it is taken as text, written as "R=100,G=200" for {R: 100, G: 200}`,
		"getColor: the path parameter layers is exploded in matrix style (;layers=a;layers=b), whose semicolons a skill escapes in a path value: it is sent unexploded (;layers=a,b)",
		`getColor: the path parameter steps is an exploded list (label style), which a skill does not build: it is taken as text, written as "3.4.5" for [3, 4, 5]`,
		"getColor: the header parameter X-Mode has style form, which OpenAPI does not define there: it is sent in simple style",
	}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes\n%q\nwant\n%q", r.Notes, want)
	}
	for _, w := range []string{"path: /colors/{args.rgb}/.{args.shades}/;depth={args.depth}/;layers={args.layers}/.{args.steps}\n",
		"description: 'Where to look. Written as \"R,100,G,200\" for {R: 100, G: 200}.'"} {
		if !strings.Contains(string(r.YAML), w) {
			t.Errorf("the file lacks %q:\n%s", w, r.YAML)
		}
	}
}

// What a skill cannot send as the document says is said, once a kind:
// properties whose names are not argument names, which cannot be sent
// where each key is a parameter of its own; a form body's object sent as
// mapping's default; form fields that Swagger 2.0's body parameter wins
// over; the hundreds of notes of a recursive schema.
func TestGenerateBodyNotes(t *testing.T) {
	tests := []struct {
		spec  string
		notes []string
	}{
		{spec: "testdata/body-notes.yaml", notes: []string{
			"findPatients: the properties first-name of the argument who are not argument names, and it is sent form exploded, each key a query parameter of its own: they cannot be sent; add them by hand",
			"findPatients: the properties last-name of the argument by are not argument names: its schema leaves them out (they pass unchecked)",
			"admitPatient: the form field ward is an object, which the document's encoding does not say how to send: it is sent as mapping's default, deepObject (ward[key]=value), where OpenAPI's (form, exploded) sends each property as a field of its own",
			"admitPatient: the properties bed-no of the argument ward are not argument names: its schema leaves them out (they pass unchecked)",
			"admitPatient: the properties first-name of the argument kin are not argument names, and it is sent form exploded, each key a form field of its own: they cannot be sent; add them by hand",
			"saveChart: the argument entry nests deeper than the 8 levels a skill's arguments may: below that, objects and lists are taken without their properties and items",
			"saveChart: the argument entry.entry.entry.entry.entry.entry.entry.any has no single type; it is taken as a string",
			"saveChart: the argument entry.entry.entry.entry.entry.entry.seeAlso.any has no single type; it is taken as a string",
			"saveChart: the argument entry.entry.entry.entry.entry.entry.any has no single type; it is taken as a string (and 252 more such notes)",
			"saveChart: the argument seeAlso nests deeper than the 8 levels a skill's arguments may: below that, objects and lists are taken without their properties and items",
		}},
		{spec: "testdata/swagger-2.0-form.yaml", notes: []string{
			"addDog: the operation has both a body parameter and formData parameters, which Swagger 2.0 forbids: the body is sent, and the form fields photo, note are left out",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			r := generateFile(t, tt.spec, openapi.Options{})
			if !slices.Equal(r.Notes, tt.notes) {
				t.Errorf("notes\n%q\nwant\n%q", r.Notes, tt.notes)
			}
			skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
			if err != nil {
				t.Fatalf("the generated file does not load: %v", err)
			}
			skills.Close()
		})
	}
}

// An enum too large to publish is left out, the last thing the generator
// leaves out, with a note: the skill is kept.
func TestGenerateHugeEnum(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\npaths:\n  /codes:\n    get:\n      operationId: lookup\n      parameters:\n" +
		"        - {name: code, in: query, schema: {type: string, enum: [")
	for i := range 20000 {
		fmt.Fprintf(&b, "code-%05d, ", i)
	}
	b.WriteString("]}}\n")
	r, err := openapi.Generate("codes.yaml", []byte(b.String()), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Skills, []string{"lookup"}) {
		t.Fatalf("skills %v, left out %+v", r.Skills, r.LeftOut)
	}
	want := "lookup: the arguments' JSON Schema is more than the 65536 bytes a skill may publish: the enums of its arguments are left out (any value of an argument's type passes)"
	if !slices.Contains(r.Notes, want) || strings.Contains(string(r.YAML), "code-00001") {
		t.Errorf("notes %q lack %q, or the file keeps the enum", r.Notes, want)
	}
}

// The client-credentials file loads, its upstream's token from the
// scheme's token URL.
func TestGenerateClientCredentialsLoads(t *testing.T) {
	r := generateFile(t, "testdata/client-credentials.yaml", openapi.Options{})
	skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
	if err != nil {
		t.Fatalf("the generated file does not load: %v\n%s", err, r.YAML)
	}
	skills.Close()
	if want := []string{"OAUTH2_CLIENT_ID", "OAUTH2_CLIENT_SECRET", "PARTNER_KEY"}; !slices.Equal(r.Env, want) {
		t.Errorf("env %v, want %v", r.Env, want)
	}
}

// The security schemes of the operations kept become the file's
// credentials, each sent as upstream.oauth2 can and as the API wants them,
// and the notes say what to configure, without contradicting the file.
func TestGenerateCredentials(t *testing.T) {
	tests := []struct {
		name, spec string
		opts       openapi.Options
		env        []string
		want       []string // in the file
		absent     []string // from the file
		notes      []string // each in one note
		notNotes   []string // in no note
	}{
		{name: "a token URL over http to another host falls back to a static token", spec: "testdata/credentials.yaml",
			opts: openapi.Options{Operations: []string{"readReports"}, UpstreamURL: "http://api.internal:8080"},
			env:  []string{"CLIENT_CREDS"}, want: []string{"Authorization: Bearer {env.CLIENT_CREDS}"}, absent: []string{"oauth2:"},
			notes: []string{`security scheme "clientCreds" (oauth2, flows clientCredentials) has the token URL http://api.internal:8080/oauth/token, ` +
				"and upstream.oauth2's token_url must be https://", "set upstream.oauth2 with grant: client_credentials"},
			notNotes: []string{"user's token"}},
		{name: "a relative token URL against the placeholder is to set too", spec: "testdata/swagger-2.0-no-host.yaml",
			env:   []string{"PARTNER_CLIENT_ID", "PARTNER_CLIENT_SECRET"},
			want:  []string{"token_url: http://127.0.0.1:8080/oauth/token", `, and upstream.oauth2.token_url (the document's "/oauth/token", resolved`},
			notes: []string{`the document's server "/api" is relative to where the document is served: set upstream.url to the API's address, and upstream.oauth2.token_url`}},
		{name: "a left-out operation's scheme keeps no other out", spec: "testdata/credentials.yaml",
			opts: openapi.Options{Operations: []string{"writeReportBroken", "readStatus"}, UpstreamURL: "https://api.example.test"},
			env:  []string{"BEARER_AUTH"}, want: []string{"Authorization: Bearer {env.BEARER_AUTH}"}, absent: []string{"oauth2:", "CLIENT_CREDS"},
			notes: []string{"writeReportBroken (POST /reports) is left out"}, notNotes: []string{"only the first scheme's is kept"}},
		{name: "a left-out operation's scopes are not asked for", spec: "testdata/credentials.yaml",
			opts: openapi.Options{Operations: []string{"readReports", "writeReportBroken"}, UpstreamURL: "https://api.example.test"},
			env:  []string{"CLIENT_CREDS_CLIENT_ID", "CLIENT_CREDS_CLIENT_SECRET"}, want: []string{"scopes: ['reports:read']\n"}},
		{name: "a user's token that loses Authorization is not said to be sent", spec: "testdata/credentials.yaml",
			opts: openapi.Options{Operations: []string{"readProfile"}, UpstreamURL: "https://api.example.test"},
			env:  []string{"BASIC_AUTH"}, want: []string{"Authorization: Basic {env.BASIC_AUTH}"}, absent: []string{"USER_CODE"},
			notes: []string{`security scheme "userCode" also uses the header Authorization`}, notNotes: []string{"static bearer token"}},
		{name: "cookies required together share the header", spec: "testdata/credentials.yaml",
			opts: openapi.Options{Operations: []string{"readSession"}, UpstreamURL: "https://api.example.test"},
			env:  []string{"SESSION_COOKIE", "CSRF_COOKIE"}, want: []string{"Cookie: session={env.SESSION_COOKIE}; csrf={env.CSRF_COOKIE}\n"},
			notNotes: []string{"also uses the header"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := generateFile(t, tt.spec, tt.opts)
			if !slices.Equal(r.Env, tt.env) {
				t.Errorf("env %v, want %v", r.Env, tt.env)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(r.YAML), w) {
					t.Errorf("the file lacks %q:\n%s", w, r.YAML)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(string(r.YAML), a) {
					t.Errorf("the file holds %q:\n%s", a, r.YAML)
				}
			}
			for _, w := range tt.notes {
				if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, w) }) {
					t.Errorf("no note says %q: %q", w, r.Notes)
				}
			}
			for _, a := range tt.notNotes {
				if slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, a) }) {
					t.Errorf("a note says %q: %q", a, r.Notes)
				}
			}
		})
	}
}

// The rules, nested properties, unions and encodings the document says
// become the arguments' own keys; what a skill cannot carry is left out,
// and said, naming the operation and the argument.
func TestGenerateRichArguments(t *testing.T) {
	r := generateFile(t, "testdata/rich-args.yaml", openapi.Options{})
	for _, want := range []string{
		"      code:\n        type: string\n        pattern: ^[A-Z]{3}$\n",
		"        min_length: 1\n        max_length: 40\n",
		"        format: date\n",
		"        exclusive_minimum: 0\n        maximum: 1\n",
		"      phones:\n        type: array\n        min_items: 1\n        max_items: 3\n        items:\n          type: string\n          pattern: ^\\+[0-9]+$\n",
		"          city:\n            type: string\n            required: true\n",
		"      metadata:\n        type: [object, string]\n",
		"      contact:\n        type: object\n      ref:\n        type: [string, integer]\n",
		"        style: deepObject\n        explode: true\n",
		"      expand:\n        type: array\n        items: string\n        style: form\n        explode: false\n",
		"                          items: object\n",
	} {
		if !strings.Contains(string(r.YAML), want) {
			t.Errorf("the file lacks\n%s", want)
		}
	}
	wantNotes := []string{
		"createCustomer: the pattern of the argument password, ^(?=.*[0-9]).{8,}$, is not Go (RE2) syntax: it is left out",
		"createCustomer: the rules of the argument nickname do not load (arguments.nickname.enum[0]: must have at least 3 characters, not 0): they are left out",
		"searchCustomers: the query parameter sort is an object (style matrix), which a skill's query cannot send: build it by hand",
		"createCharge: the form field metadata is an object, which the document's encoding does not say how to send: it is sent as mapping's default, deepObject (metadata[key]=value), where OpenAPI's (form, exploded) sends each property as a field of its own",
		"createCharge: the form field address is an object, which the document's encoding does not say how to send: it is sent as mapping's default, deepObject (address[key]=value), where OpenAPI's (form, exploded) sends each property as a field of its own",
		"createCharge: the form field billing-ids has the style pipeDelimited, which its argument billing_ids does not carry (the names differ): it is sent as mapping's default",
		"plantTree: the argument children nests deeper than the 8 levels a skill's arguments may: below that, objects and lists are taken without their properties and items",
	}
	if !slices.Equal(r.Notes, wantNotes) {
		t.Errorf("notes\n%q\nwant\n%q", r.Notes, wantNotes)
	}
	if want := []string{"createCustomer", "searchCustomers", "createCharge", "plantTree"}; !slices.Equal(r.Skills, want) {
		t.Errorf("skills %v, want %v", r.Skills, want)
	}
}

// A skill whose arguments' JSON Schema would pass the published bound
// keeps its arguments with less said of them, the least important
// first, and says so: never left out.
func TestGenerateSchemaBound(t *testing.T) {
	tests := []struct {
		name       string
		fields     int
		sub        string // the nested properties' names, before their number
		want, lose string
	}{
		{name: "nested descriptions", fields: 40, sub: "sub", want: "the descriptions of nested properties are left out",
			lose: "description: Nested " + strings.Repeat("x", 100)},
		// 1000 nested properties, all the generator writes, whose long
		// names alone pass the bound.
		{name: "nested properties", fields: 50, sub: strings.Repeat("n", 80), want: "the properties and items of its arguments are left out",
			lose: "properties:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("openapi: 3.0.3\npaths:\n  /big:\n    post:\n      operationId: big\n      requestBody:\n        content:\n" +
				"          application/json:\n            schema:\n              type: object\n              properties:\n")
			for i := range tt.fields {
				fmt.Fprintf(&b, "                field%03d:\n                  type: object\n                  description: Field %d.\n"+
					"                  properties:\n", i, i)
				for j := range 20 {
					fmt.Fprintf(&b, "                    %s%02d: {type: string, description: Nested %s}\n", tt.sub, j, strings.Repeat("x", 100))
				}
			}
			r, err := openapi.Generate("big.yaml", []byte(b.String()), openapi.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Skills, []string{"big"}) || len(r.LeftOut) > 0 {
				t.Fatalf("skills %v, left out %+v", r.Skills, r.LeftOut)
			}
			skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
			if err != nil {
				t.Fatalf("the generated file does not load: %v", err)
			}
			defer skills.Close()
			if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "big: ") && strings.HasSuffix(n, tt.want) }) {
				t.Errorf("no note says %q: %q", tt.want, r.Notes)
			}
			if strings.Contains(string(r.YAML), tt.lose) || !strings.Contains(string(r.YAML), "description: Field 1.") {
				t.Errorf("the file keeps %q, or lacks the arguments' own descriptions", tt.lose)
			}
		})
	}
}

// An object exploded into the query whose schema names no key is left
// out with a note: mapping sends no key it does not declare, so the
// skill still loads and the rest of the operation is kept.
func TestGenerateFreeFormQueryObject(t *testing.T) {
	src := `openapi: 3.0.3
paths:
  /items:
    get:
      operationId: listItems
      parameters:
        - {name: filter, in: query, style: form, explode: true, schema: {type: object}}
        - {name: tags, in: query, schema: {type: object, additionalProperties: {type: string}}}
        - {name: q, in: query, schema: {type: string}}
    post:
      operationId: addItem
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {meta: {type: object}, name: {type: string}}}
            encoding: {meta: {style: form, explode: true}}
`
	r, err := openapi.Generate("items.yaml", []byte(src), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
	if err != nil {
		t.Fatalf("the generated file does not load: %v", err)
	}
	defer skills.Close()
	if got := skills.ByID("listItems").DeclaredArguments(); !slices.Equal(got, []string{"q"}) {
		t.Errorf("arguments %v, want [q]", got)
	}
	if skills.ByID("addItem") == nil || !slices.Contains(r.Notes, "addItem: the form field meta is an object whose keys are fields of their own (form, exploded), and its schema names none of them: it is sent as mapping's default (deepObject)") {
		t.Errorf("addItem: notes %q; want it kept, its free-form field sent as deepObject", r.Notes)
	}
	for _, name := range []string{"filter", "tags"} {
		want := "listItems: the query parameter " + name + " is an object whose keys are query parameters of their own (form, exploded), and its schema names none of them: declare its properties by hand to send it"
		if !slices.Contains(r.Notes, want) {
			t.Errorf("notes %q\nwant %q", r.Notes, want)
		}
	}
}

// A recursive schema of many properties stops at maxNested nested
// arguments a skill, with a note, and the file loads.
func TestGenerateNestedBudget(t *testing.T) {
	src := `openapi: 3.0.3
paths:
  /trees:
    post:
      operationId: plant
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Node'}
components:
  schemas:
    Node:
      type: object
      properties:
        a: {$ref: '#/components/schemas/Node'}
        b: {$ref: '#/components/schemas/Node'}
        c: {$ref: '#/components/schemas/Node'}
        d: {$ref: '#/components/schemas/Node'}
`
	r, err := openapi.Generate("trees.yaml", []byte(src), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	skills, err := mapping.Parse("generated.yaml", r.YAML, mapping.Options{LookupEnv: anyEnv})
	if err != nil {
		t.Fatalf("the generated file does not load: %v", err)
	}
	skills.Close()
	want := "plant: the skill's arguments nest more than 1000 properties and items: the others are taken without theirs"
	if !slices.Contains(r.Notes, want) {
		t.Errorf("notes %q lack %q", r.Notes, want)
	}
	if n := strings.Count(string(r.YAML), "type: object"); n > 1000+4 {
		t.Errorf("%d objects written", n)
	}
}
