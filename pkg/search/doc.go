// Package search is the tool-search index behind the optimizer mode's
// find_tool meta-tool: an agent describes in words what it wants to do, and
// the index returns the tools that best fit.
//
// It is a pure, in-memory BM25F index. Each tool is a [Doc] with five
// weighted fields: the tokens of its name, its title, its description, and
// the names and descriptions of the parameters found in its input schema
// (nested objects and arrays included, to a bounded depth). Documents and
// queries go through the same pipeline, [Tokenize]: split on punctuation
// and on camelCase and digit boundaries, lowercase, drop stop words, spell
// out common abbreviations ("repo", "k8s", "PR"), and [Stem]. A query
// first loses the words agents frame it with ("I need a tool to", "help
// me"); the terms of its literals (paths, file names, keys, identifiers:
// "/var/log/app.log", "PROJ-77") weigh less, being what a tool is given
// rather than what it does; each term is then expanded at reduced weights with the
// curated synonyms ([DefaultSynonyms]) and with the synonyms, derived
// words, hypernyms (for a verb: the more general action, "book" →
// schedule) and, for a noun, the first words of its definition, from an
// English lexicon derived from WordNet 3.0 (embedded, with its licence, in
// wordnet/; built by internal/wordnetgen); an added term's idf counts at
// most a little more than that of the word it stands for. A second pass
// rescales each matching tool's score by the share of the query's words
// it covers, in any field and in its name or title, adds the score of
// its group (its backend, by default the name's prefix) as a whole, and
// weighs the agreement of intent: the family (reading, creating,
// changing, removing, sending, running) of the query's first word, or reading for a
// question, against that of the tool's action, the first word of its
// name after the backend's ("create" in github_create_issue); the same
// family raises the score, another lowers it, an unknown one leaves it.
// Options.Weights and the other defaults were chosen on a tuning corpus and
// checked on a held-out one (testdata/tune, testdata/eval; see
// docs/benchmarks.md).
//
// An [Index] is immutable once [Build] returns it, so it is searched
// concurrently without locks; a catalog change means building a new index
// and swapping it in. The loop that drives the package in the gateway is:
//
//	var current atomic.Pointer[search.Index]
//
//	// Whenever the tool catalog changes (one goroutine):
//	docs := make([]search.Doc, len(tools))
//	for i, t := range tools {
//		docs[i] = search.Doc{Name: t.Name, Title: t.Title,
//			Description: t.Description, InputSchema: t.InputSchema}
//	}
//	current.Store(search.Build(docs, nil))
//
//	// For every find_tool call (any number of goroutines):
//	ix := current.Load()
//	for _, h := range ix.Search(args.Query, args.Limit) {
//		t := tools[h.Doc] // the tools slice the index was built from
//		result = append(result, found{t.Name, t.Description, t.InputSchema, h.Score})
//	}
//
// Hit.Doc indexes the slice passed to Build, so the caller keeps that slice
// (or the catalog snapshot it came from) together with the index, e.g. both
// in the struct held by the atomic pointer.
//
// Limits: a limit <= 0 means [DefaultLimit] (8); more than [MaxLimit] (50) is
// capped. Equal scores are ordered by name, so results are deterministic.
package search
