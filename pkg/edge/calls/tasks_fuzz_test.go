package calls

import (
	"encoding/json"
	"testing"
)

// FuzzSwapTaskID: whatever a backend answers, a swapped result is one
// JSON object whose id at the path is the new one.
func FuzzSwapTaskID(f *testing.F) {
	for _, s := range []string{
		`{"task":{"taskId":"t-1","status":"working"}}`, `{"taskId":"t-1"}`,
		`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-9"}},"content":[]}`,
		`{"task":{"taskId":5}}`, `{"task":[]}`, `null`, `{"taskId":""}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	paths := [][]string{nil, {"task"}, {"_meta", RelatedTask}}
	f.Fuzz(func(t *testing.T, data []byte, p uint8) {
		path := paths[int(p)%len(paths)]
		out, old, ok := swapTaskID(data, path, func(id string) string { return "edge/" + id })
		if !ok {
			return
		}
		var v any = map[string]any{}
		if json.Unmarshal(out, &v) != nil {
			t.Fatalf("swapped %q into invalid JSON %q", data, out)
		}
		m := v.(map[string]any)
		for _, k := range path {
			m = m[k].(map[string]any)
		}
		if m["taskId"] != "edge/"+old {
			t.Fatalf("taskId %v, want edge/%s", m["taskId"], old)
		}
	})
}
