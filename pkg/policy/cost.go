package policy

import (
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// sizeCost is the runtime cost of a call by the size of what it touches:
// one unit, plus one per ten bytes of string and bytes arguments and
// result, plus one per element of list arguments. CEL's own runtime cost
// counts a call dispatched on dyn values (every claim is one) as one unit
// whatever the sizes, so without this a comprehension over a large claim
// could concatenate or scan megabytes within the cost limit.
type sizeCost struct{}

func (sizeCost) CallCost(_, _ string, args []ref.Val, result ref.Val) *uint64 {
	var bytes, elems uint64
	for _, a := range args {
		b, e := size(a)
		bytes, elems = bytes+b, elems+e
	}
	if b, _ := size(result); b > 0 {
		bytes += b
	}
	if bytes == 0 && elems == 0 {
		return nil // CEL's own estimate
	}
	c := 1 + bytes/10 + elems
	return &c
}

func size(v ref.Val) (bytes, elems uint64) {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x)), 0
	case types.Bytes:
		return uint64(len(x)), 0
	case traits.Lister:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return 0, uint64(n)
		}
	}
	return 0, 0
}
