package mcpwire

import (
	"encoding/json"

	"github.com/valyala/fastjson"
)

// FastJSONValid reports whether data may be given to fastjson's parser: nested
// at most fastjson.MaxDepth (300; deeper, its parser fails anyway, after
// building error texts whose cost grows with the square of the depth) and
// valid by encoding/json's validator, a state machine linear in the size.
// fastjson's own validator builds such texts too: 2 KB of invalid JSON
// nested 1,000 deep cost it 19 ms, a lever for anyone who can send bytes.
// What is refused here goes to the go-sdk's decoder, or fails as invalid.
//
// fastjson's validator is the faster of the two (about 2.5x on a 4 KiB
// body), and its extra cost on invalid input is bounded by the depth:
// bodies nested at most fastValidateDepth deep (nearly all calls) use it.
func FastJSONValid(data []byte) bool {
	d, err := Depth(data, fastjson.MaxDepth)
	if err != nil {
		return false
	}
	if d <= fastValidateDepth {
		return fastjson.ValidateBytes(data) == nil
	}
	return json.Valid(data)
}

// fastValidateDepth is the deepest nesting given to fastjson's validator
// (2 KB of invalid JSON this deep costs it about as much as a 4 KiB call's
// parse).
const fastValidateDepth = 16
