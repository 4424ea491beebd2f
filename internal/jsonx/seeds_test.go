package jsonx

// seeds are documents every fuzz target here starts from: requests in the
// shapes the agent reads, and some that no reader takes.
var seeds = []string{
	`{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[` +
		`{"text":"Hello"},{"data":{"units":"metric","days":[1,2,3]}}]},"configuration":{"returnImmediately":false}}}`,
	` { "a" : [ 1 , -0 , 2.5e3 , true , false , null , { } , [ ] , "x" ] , "b" : { "c" : "\u00e9\"" } } `,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"id":12345678901234567,"big":1e999,"neg":-12345678901234567890}`,
	`{"jsonrpc":2,"method":"SendMessage","params":null}`,
	`{"m\u0065ssage":{},"x":{"y":[1,{"z":"}"}]}}`,
	`{"id":[1],"flag":"yes"}`,
	`[]`, `"x"`, `{}`, `{"params":[]}`,
}
