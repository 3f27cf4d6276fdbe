package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCompileWorstCase compiles the largest section the bounds admit, of
// expressions that parse, in bounded time.
func TestCompileWorstCase(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	expr := strings.Repeat(`"ops" in claims.roles && `, 40) + "true"
	if len(expr) > MaxWhenBytes {
		t.Fatalf("expr of %d bytes", len(expr))
	}
	s := &Section{}
	for i := range MaxRules {
		s.Rules = append(s.Rules, Rule{Name: fmt.Sprintf("r%d", i), Effect: Deny, When: expr})
	}
	start := time.Now()
	_, err := Compile(s)
	took := time.Since(start)
	t.Logf("%d rules of %d bytes: %v (%v)", MaxRules, len(expr), took, err)
	if took > 20*time.Second { // about 0.4 s alone, 3 s under the race detector
		t.Fatalf("compile took %v", took)
	}
}
