package fastpath

import "bytes"

// ResultComplete is the member the 2026-07-28 revision requires on a
// result that needs no more input from the client.
const ResultComplete = `"resultType":"complete"`

// MarkComplete adds resultType "complete" to enc, the encoding of a
// result object of the go-sdk (which writes the member last when it has
// it, as "complete" here: a result needing input is never marked).
func MarkComplete(enc []byte) []byte {
	if len(enc) < 2 || enc[0] != '{' || bytes.HasSuffix(enc, []byte(ResultComplete+"}")) {
		return enc
	}
	out := make([]byte, 0, len(enc)+len(ResultComplete)+1)
	out = append(append(out, '{'), ResultComplete...)
	if rest := bytes.TrimSpace(enc[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, enc[1:]...)
}
