package search

// Weights are the BM25F field weights: how much one occurrence of a term in
// a field counts relative to one in the description. A zero weight takes the
// default; a negative weight leaves the field out of the index entirely.
type Weights struct {
	Name             float64 // tokens of the tool name; default 1
	Title            float64 // tokens of the display title; default 0.5
	Description      float64 // tokens of the description; default 1
	ParamName        float64 // input schema property names; default not indexed
	ParamDescription float64 // input schema property descriptions, titles and enum values; default 0.25
}

// Options configure [Build]. A nil *Options means all defaults; in a non-nil
// Options, every zero field takes its default.
type Options struct {
	Weights Weights

	// K1 is the BM25 term-frequency saturation; default 3. Values <= 0
	// take the default.
	K1 float64

	// B is the BM25 length normalisation in (0, 1]; default 0.5. Zero or
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
	// relative to a term the query contains; default 1. A negative
	// value disables expansion.
	SynonymWeight float64

	// LexiconWeight and DerivationWeight are how much a term added from
	// the embedded English lexicon (derived from WordNet) counts: a
	// synonym of one of the query word's most frequent senses, and a word
	// derived from it or it from them ("deletion" for "delete"). Defaults
	// DefaultLexiconWeight and DefaultDerivationWeight; negative disables.
	LexiconWeight    float64
	DerivationWeight float64

	// GlossWeight is how much a term of the definition WordNet gives a
	// query noun's most frequent sense counts ("invoice": itemized,
	// statement, money): the words that define a thing are the words a
	// tool about it may use instead. Default DefaultGlossWeight; negative
	// disables.
	GlossWeight float64

	// HypernymWeight is how much a term naming the more general action
	// that a query verb's frequent senses are kinds of counts ("book":
	// schedule; "locate": find, ascertain): a tool may use the general
	// word. Default DefaultHypernymWeight; negative disables.
	HypernymWeight float64

	// CoverageWeight and NameCoverageWeight rescore the candidates in a
	// second pass: a tool's BM25F score is multiplied by
	// 1 + CoverageWeight·c + NameCoverageWeight·n, where c is the share
	// of the query's words (weighted by idf; a word matched only through
	// an added term counts half) the tool matches in any field, and n the
	// share it matches in its name or title. Defaults
	// DefaultCoverageWeight and DefaultNameCoverageWeight (0: name
	// coverage is off unless set); negative disables.
	CoverageWeight     float64
	NameCoverageWeight float64

	// GroupWeight is how much a tool's group (Doc.Group: its backend)
	// counts: the BM25 score of the group's document, the union of its
	// tools' names, titles and descriptions, times GroupWeight is added to
	// the score of each tool of the group that matched the query. Default
	// DefaultGroupWeight; negative disables.
	GroupWeight float64

	// IntentWeight and IntentPenalty weigh the agreement between what
	// the query asks to do and what a tool's name says it does (see
	// intent.go): of the same family (reading, creating, changing,
	// removing), the tool's score is multiplied by 1 + IntentWeight; of
	// different ones, by 1 − IntentPenalty. Defaults DefaultIntentWeight
	// and DefaultIntentPenalty; negative disables; the penalty is capped
	// at 0.9.
	IntentWeight, IntentPenalty float64

	// LiteralWeight is how much a query term counts, with the terms
	// expansion adds for it, when it comes from a literal: a run of the
	// query without spaces that holds a path, file or host name,
	// identifier, key or expression ("/var/log/app.log", "PROJ-77",
	// "http_requests_total"). Such values are what a tool is given, not
	// what it does. Default DefaultLiteralWeight; values above 1 are
	// clamped to 1; negative leaves literals out of the query.
	LiteralWeight float64

	// AddedIDFCap bounds the idf of a term that expansion adds for a
	// query word to AddedIDFCap times the idf of the word itself. The
	// rare relatives of a word common in the catalog ("file" → register,
	// "show" → exhibit) most often belong to another of its senses; this
	// way none counts much more than the word it stands for. Default
	// DefaultAddedIDFCap; negative disables.
	AddedIDFCap float64
}

// Default option values.
const (
	DefaultK1             = 3
	DefaultB              = 0.5
	DefaultMaxSchemaDepth = 5
	DefaultSynonymWeight  = 1

	DefaultLexiconWeight      = 0.1
	DefaultDerivationWeight   = 0.2
	DefaultGlossWeight        = 0.3
	DefaultHypernymWeight     = 0.5
	DefaultCoverageWeight     = 30
	DefaultNameCoverageWeight = 0 // off: with GlossWeight, name coverage lost on the tuning corpus
	DefaultGroupWeight        = 0.8
	DefaultIntentWeight       = 0.5
	DefaultIntentPenalty      = 0.5
	maxIntentPenalty          = 0.9
	DefaultLiteralWeight      = 0.2
	DefaultAddedIDFCap        = 1.1
)

// DefaultWeights are the field weights used when Options leaves them zero.
// They, and the other defaults, were chosen by TestTuneOptions on the
// tuning corpus (testdata/tune) and the project's catalog (testdata) and
// validated on the evaluation corpus (testdata/eval); property names, as a
// field of their own, did not help.
var DefaultWeights = Weights{Name: 1, Title: 0.5, Description: 1, ParamName: -1, ParamDescription: 0.25}

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
	weight   [numFields]float64 // 0 means the field is not indexed
	k1, b    float64
	maxDepth int
	expansion
	coverage, nameCoverage float64 // 0 disables
	groupWeight            float64 // 0 disables
	intent, intentPenalty  float64 // 0 disables
	addedIDFCap            float64 // 0 disables
}

func resolve(o *Options) resolved {
	var in Options
	if o != nil {
		in = *o
	}
	pick := func(v, def float64) float64 {
		if v == 0 {
			v = def
		}
		return max(v, 0)
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
	r.lexWeight = pick(in.LexiconWeight, DefaultLexiconWeight)
	r.derWeight = pick(in.DerivationWeight, DefaultDerivationWeight)
	r.glossWeight = pick(in.GlossWeight, DefaultGlossWeight)
	r.hyperWeight = pick(in.HypernymWeight, DefaultHypernymWeight)
	if r.lexWeight > 0 || r.derWeight > 0 || r.glossWeight > 0 || r.hyperWeight > 0 {
		r.lexicon = defaultLexicon()
	}
	r.litWeight = min(pick(in.LiteralWeight, DefaultLiteralWeight), 1)
	r.addedIDFCap = pick(in.AddedIDFCap, DefaultAddedIDFCap)
	r.coverage = pick(in.CoverageWeight, DefaultCoverageWeight)
	r.nameCoverage = pick(in.NameCoverageWeight, DefaultNameCoverageWeight)
	r.groupWeight = pick(in.GroupWeight, DefaultGroupWeight)
	r.intent = pick(in.IntentWeight, DefaultIntentWeight)
	r.intentPenalty = min(pick(in.IntentPenalty, DefaultIntentPenalty), maxIntentPenalty)
	if r.maxDepth <= 0 {
		r.maxDepth = DefaultMaxSchemaDepth
	}
	return r
}
