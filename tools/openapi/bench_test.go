package openapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/tools/openapi"
)

// largeDocument is an API description the size of a large developer
// platform's: resources operations each, sharing component schemas by
// $ref, with path and query parameters, enums, nested and recursive
// objects, and a JSON body on every write.
func largeDocument(resources int) []byte {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: Large, version: '1'}\nservers: [{url: 'https://api.example.test/v1'}]\n" +
		"components:\n  securitySchemes:\n    token: {type: http, scheme: bearer}\n  schemas:\n" +
		"    Owner:\n      type: object\n      required: [login]\n      properties:\n" +
		"        login: {type: string, pattern: '^[a-z0-9-]{1,39}$', description: The owner's handle.}\n" +
		"        kind: {type: string, enum: [user, organization, bot]}\n" +
		"        parent: {$ref: '#/components/schemas/Owner'}\n")
	for r := range resources {
		fmt.Fprintf(&b, "    Item%d:\n      type: object\n      required: [name]\n      properties:\n"+
			"        name: {type: string, minLength: 1, maxLength: 100, description: The item's name.}\n"+
			"        state: {type: string, enum: [open, closed, draft, archived], default: open}\n"+
			"        labels: {type: array, items: {type: string, maxLength: 50}, maxItems: 100}\n"+
			"        due: {type: string, format: date-time}\n"+
			"        owner: {$ref: '#/components/schemas/Owner'}\n"+
			"        metadata: {anyOf: [{type: object, additionalProperties: {type: string}}, {type: string, enum: ['']}]}\n"+
			"        settings:\n          type: object\n          properties:\n", r)
		for f := range 10 {
			fmt.Fprintf(&b, "            option%d: {type: integer, minimum: 0, maximum: 1000, description: Option %d of the item.}\n", f, f)
		}
	}
	b.WriteString("security: [{token: []}]\npaths:\n")
	for r := range resources {
		fmt.Fprintf(&b, "  /orgs/{org}/items%d:\n    parameters:\n      - {name: org, in: path, required: true, schema: {type: string}}\n"+
			"    get:\n      operationId: list-items-%d\n      summary: Lists the items of kind %d.\n      parameters:\n"+
			"        - {name: per_page, in: query, schema: {type: integer, maximum: 100, default: 30}}\n"+
			"        - {name: page, in: query, schema: {type: integer, minimum: 1}}\n"+
			"        - {name: sort, in: query, schema: {type: string, enum: [created, updated, name]}}\n"+
			"        - {name: filter, in: query, style: deepObject, schema: {type: object, properties: {state: {type: string}, label: {type: string}}}}\n"+
			"      responses: {'200': {description: ok, content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Item%d'}}}}}}\n"+
			"    post:\n      operationId: create-item-%d\n      summary: Creates an item of kind %d.\n"+
			"      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Item%d'}}}}\n"+
			"      responses: {'201': {description: created}}\n", r, r, r, r, r, r, r)
		fmt.Fprintf(&b, "  /orgs/{org}/items%d/{id}:\n    parameters:\n      - {name: org, in: path, required: true, schema: {type: string}}\n"+
			"      - {name: id, in: path, required: true, schema: {type: integer}}\n"+
			"    get: {operationId: get-item-%d, summary: Gets an item., responses: {'200': {description: ok}}}\n"+
			"    patch:\n      operationId: update-item-%d\n"+
			"      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Item%d'}}}}\n"+
			"      responses: {'200': {description: ok}}\n"+
			"    delete: {operationId: delete-item-%d, responses: {'204': {description: gone}}}\n", r, r, r, r, r)
	}
	return []byte(b.String())
}

// BenchmarkGenerateLarge generates the skills file of a document of 850
// operations, about the size of the largest real ones: the whole file is
// written and checked to load. A generator that takes seconds here is one
// an operator waits on at every change of the document.
func BenchmarkGenerateLarge(b *testing.B) {
	src := largeDocument(170)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		r, err := openapi.Generate("large.yaml", src, openapi.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Skills) != 850 || len(r.LeftOut) > 0 {
			b.Fatalf("%d skills, left out %v", len(r.Skills), r.LeftOut)
		}
	}
}
