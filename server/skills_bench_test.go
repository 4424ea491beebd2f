package server_test

import (
	"os"
	"testing"
)

// BenchmarkSendMessageSkills is one blocking SendMessage to the skill
// "item", named by metadata.skill, in the harness's one-skill file and in
// its nine-skill file (bench/): what the other eight skills cost a message
// that names its skill, which is nothing when selection is one lookup.
func BenchmarkSendMessageSkills(b *testing.B) {
	for _, file := range []string{"skills.yaml", "skills9.yaml"} {
		b.Run(file, func(b *testing.B) {
			src, err := os.ReadFile("../bench/" + file)
			if err != nil {
				b.Fatal(err)
			}
			h := memoryHandler(b, file, string(src), answering(weatherBody), nil)
			benchSend(b, h, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-0000000000000000",`+
				`"role":"ROLE_USER","metadata":{"skill":"item"},"parts":[{"data":{"id":1}}]}}}`)
		})
	}
}
