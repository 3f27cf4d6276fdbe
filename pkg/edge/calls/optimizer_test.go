package calls

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseFindArgs(t *testing.T) {
	for _, tc := range []struct {
		args      string
		query     string
		limit     int
		errSubstr string // empty: valid
	}{
		{`{"query":"send mail"}`, "send mail", 8, ""},
		{`{"query":"send mail","limit":3}`, "send mail", 3, ""},
		{`{"query":"send mail","limit":3.0}`, "send mail", 3, ""},
		{`{"query":"send mail","limit":null}`, "send mail", 8, ""},
		{`{"query":"send mail","limit":50}`, "send mail", 50, ""},
		{`{"query":"send mail","limit":51}`, "send mail", 50, ""}, // clamped
		{`{"query":"send mail","limit":1e6}`, "send mail", 50, ""},
		{`{"query":"x","extra":true}`, "x", 8, ""},
		{``, "", 0, `"query" is required`},
		{`{}`, "", 0, `"query" is required`},
		{`{"query":null}`, "", 0, `"query" is required`},
		{`{"query":""}`, "", 0, `"query" must not be empty`},
		{`{"query":"  \t"}`, "", 0, `"query" must not be empty`},
		{`{"query":42}`, "", 0, `"query" must be a string`},
		{`{"query":"x","limit":0}`, "", 0, `"limit" must be an integer from 1 to 50, got 0`},
		{`{"query":"x","limit":-3}`, "", 0, `"limit" must be an integer`},
		{`{"query":"x","limit":2.5}`, "", 0, `"limit" must be an integer`},
		{`{"query":"x","limit":"5"}`, "", 0, `"limit" must be an integer`},
		{`["x"]`, "", 0, "must be a JSON object"},
	} {
		q, l, err := parseFindArgs(json.RawMessage(tc.args))
		if tc.errSubstr == "" {
			if err != nil || q != tc.query || l != tc.limit {
				t.Errorf("parseFindArgs(%s) = %q, %d, %v; want %q, %d", tc.args, q, l, err, tc.query, tc.limit)
			}
			continue
		}
		if !errors.Is(err, errInvalidArguments) || !strings.Contains(err.Error(), tc.errSubstr) || !strings.HasPrefix(err.Error(), "find_tool: ") {
			t.Errorf("parseFindArgs(%s) error = %v, want one naming %s", tc.args, err, tc.errSubstr)
		}
	}
}

func TestParseCallArgs(t *testing.T) {
	for _, tc := range []struct {
		args, name, callArgs, errSubstr string
	}{
		{`{"tool_name":"alpha_echo","arguments":{"text":"hi"}}`, "alpha_echo", `{"text":"hi"}`, ""},
		{`{"tool_name":"alpha_echo"}`, "alpha_echo", ``, ""},
		{`{"tool_name":"alpha_echo","arguments":null}`, "alpha_echo", ``, ""},
		{`{}`, "", "", `"tool_name" is required`},
		{`{"tool_name":""}`, "", "", `"tool_name" is required`},
		{`{"tool_name":7}`, "", "", `"tool_name" is required`},
		{`{"tool_name":"alpha_echo","arguments":[1]}`, "", "", `call_tool "alpha_echo": invalid arguments: "arguments" must be a JSON object`},
		{`{"tool_name":"alpha_echo","arguments":"x"}`, "", "", `"arguments" must be a JSON object`},
		{`"alpha_echo"`, "", "", "must be a JSON object"},
	} {
		name, args, err := parseCallArgs(json.RawMessage(tc.args))
		if tc.errSubstr == "" {
			if err != nil || name != tc.name || string(args) != tc.callArgs {
				t.Errorf("parseCallArgs(%s) = %q, %s, %v", tc.args, name, args, err)
			}
			continue
		}
		if !errors.Is(err, errInvalidArguments) || !strings.Contains(err.Error(), tc.errSubstr) {
			t.Errorf("parseCallArgs(%s) error = %v, want one naming %s", tc.args, err, tc.errSubstr)
		}
	}
}
