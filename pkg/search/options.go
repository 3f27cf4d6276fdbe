package search

// Weights are the BM25F field weights: how much one occurrence of a term in
// a field counts relative to one in the description. A zero weight takes the
// default; a negative weight leaves the field out of the index entirely.
type Weights struct {
	Name             float64 // tokens of the tool name; default 3
	Title            float64 // tokens of the display title; default 2
	Description      float64 // tokens of the description; default 1
	ParamName        float64 // input schema property names; default 1
	ParamDescription float64 // input schema property descriptions, titles and enum values; default 1
}

// Options configure [Build]. A nil *Options means all defaults; in a non-nil
// Options, every zero field takes its default.
type Options struct {
	Weights Weights

	// K1 is the BM25 term-frequency saturation; default 1.2. Values <= 0
	// take the default.
	K1 float64

	// B is the BM25 length normalisation in (0, 1]; default 0.75. Zero or
	// negative takes the default; values above 1 are clamped to 1.
	B float64

	// MaxSchemaDepth bounds how deep the input schema is read: the
	// top-level properties are level 1, and each step into a property's
	// own properties, array items, additionalProperties or an
	// anyOf/oneOf/allOf branch adds one level; default 5.
	MaxSchemaDepth int

	// Synonyms are groups of words a query term is expanded with; nil
	// means [DefaultSynonyms], a non-nil empty slice means no expansion.
	// Words go through [Tokenize], so write them in plain form.
	Synonyms [][]string

	// SynonymWeight is how much a synonym added by expansion counts
	// relative to a term the query contains; default 0.8. A negative
	// value disables expansion.
	SynonymWeight float64
}

// Default option values.
const (
	DefaultK1             = 1.2
	DefaultB              = 0.75
	DefaultMaxSchemaDepth = 5
	DefaultSynonymWeight  = 0.8
)

// DefaultWeights are the field weights used when Options leaves them zero.
var DefaultWeights = Weights{Name: 3, Title: 2, Description: 1, ParamName: 1, ParamDescription: 1}

// field identifies one indexed field of a tool document.
type field uint8

const (
	fieldName field = iota
	fieldTitle
	fieldDescription
	fieldParamName
	fieldParamDescription
	numFields
)

// resolved is Options with every default filled in.
type resolved struct {
	weight    [numFields]float64 // 0 means the field is not indexed
	k1, b     float64
	maxDepth  int
	synonyms  synonymTable
	synWeight float64 // 0 disables expansion
}

func resolve(o *Options) resolved {
	var in Options
	if o != nil {
		in = *o
	}
	pick := func(v, def float64) float64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	r := resolved{k1: in.K1, b: in.B, maxDepth: in.MaxSchemaDepth}
	r.weight[fieldName] = pick(in.Weights.Name, DefaultWeights.Name)
	r.weight[fieldTitle] = pick(in.Weights.Title, DefaultWeights.Title)
	r.weight[fieldDescription] = pick(in.Weights.Description, DefaultWeights.Description)
	r.weight[fieldParamName] = pick(in.Weights.ParamName, DefaultWeights.ParamName)
	r.weight[fieldParamDescription] = pick(in.Weights.ParamDescription, DefaultWeights.ParamDescription)
	if r.k1 <= 0 {
		r.k1 = DefaultK1
	}
	if r.b <= 0 {
		r.b = DefaultB
	}
	if r.b > 1 {
		r.b = 1
	}
	groups := in.Synonyms
	if groups == nil {
		groups = DefaultSynonyms
	}
	r.synonyms = buildSynonyms(groups)
	r.synWeight = pick(in.SynonymWeight, DefaultSynonymWeight)
	if r.maxDepth <= 0 {
		r.maxDepth = DefaultMaxSchemaDepth
	}
	return r
}
