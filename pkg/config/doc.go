// Package config reads and checks the controller's fleet configuration, the
// YAML file given to `controller --config`, and applies the admin API's
// runtime changes to it.
//
// The format is the one of INTERFACE.md:
//
//	groups:
//	  - name: default
//	    backends:
//	      - name: alpha                  # [a-z0-9][a-z0-9-]{0,31}, unique in the fleet
//	        url: http://127.0.0.1:9101/mcp
//	        transport: streamable-http   # streamable-http (default) or sse
//	        headers:                     # sent on every request to this backend
//	          Authorization: {env: ALPHA_AUTHORIZATION}   # or {file: /run/secrets/alpha}
//	        allow_link_local: false      # default; true lets url reach 169.254.0.0/16, fe80::/10, cloud metadata
//	        tools:                       # also prompts: and resources: (by URI), same keys
//	          include: ["read_*"]        # globs on the backend's own names; absent = all
//	          exclude: ["delete_*"]
//	          rename: {search: find_docs} # own name -> exposed name; wins over the strategy
//	    pinned_tools: [alpha_echo]       # extension, see below
//	health:
//	  interval: 5s          # probe period per backend
//	  timeout: 2s           # one probe's deadline
//	  unhealthy_after: 2    # consecutive failures before unhealthy
//	  debounce: 5s          # change-event coalescing window; default = interval
//	aggregation:
//	  separator: "_"        # exposed tool name = <backend><separator><tool>
//	  conflicts: prefix     # prefix (default), priority or manual (package naming)
//
// Every section and key is optional except a group's name and a backend's
// name and url; null is read as "not set". Defaults: transport
// streamable-http, the health defaults of health.Policy (interval 5s,
// timeout 2s, unhealthy_after 2, debounce = interval), separator "_".
// Durations use Go syntax (time.ParseDuration). Group names follow the
// backend name rule and are unique; a separator is non-empty and made of
// [A-Za-z0-9_.-], the characters of MCP tool names.
//
// A header value is a reference, never a literal (a literal is an error);
// header names are tokens, at most 32, none of the transport's or the MCP
// protocol's own (package credential). A URL with user info is an error,
// and so is one whose host is link-local or a cloud metadata service
// unless allow_link_local is true (package backendnet). No error quotes a
// header value or a URL that may carry user info.
//
// Naming rules are checked here without any catalog (package naming):
// globs are path.Match patterns, at most 64 per list of at most 256 bytes;
// exposed names of tools and prompts are valid tool names, of resources
// absolute URIs; two renames of one group (in any of its backends) to one
// exposed name are an error under every strategy, naming both backends.
// Fleet.Naming gives a group's naming.Spec; collisions between catalogs
// are the controller's to find.
//
// Extension: a group may list pinned_tools, exposed tool names (valid MCP
// tool names, no duplicates) that an optimizer-mode edge always offers. They
// are not checked against any catalog here.
//
// A config is at most MaxSize bytes (1 MiB); a larger one is refused
// before it is parsed.
//
// # Errors
//
// The document is walked as a yaml.Node tree, so Parse stops at the first
// problem in document order and returns it as a *FieldError carrying the
// file, the line and the field path, printed as one line:
//
//	config.yaml:7: groups[0].backends[1].url: "ht!tp://x" is not an http(s) URL
//	config.yaml:8: health.intervall: unknown key (want interval, timeout, unhealthy_after or debounce)
//	config.yaml:12: groups[1].backends[0].name: backend "alpha" is already defined at line 7 (groups[0].backends[0].name)
//
// The line is the field's key line (for a missing field, its parent's).
// Unknown and duplicate keys are errors. A YAML syntax error carries a line
// but no field; as the YAML parser reports the line where the enclosing
// block began, the line given is the first at which a prefix of the document
// fails with the same message, which is where the mistake is. All of them
// match ErrInvalidConfig with errors.Is; a bad health value also matches
// health.ErrInvalidPolicy.
//
// # Runtime changes
//
// The controller keeps the current *Fleet. A SIGHUP reload parses the file
// again; an admin PUT or DELETE changes a clone. Either way Diff tells what
// to start, stop and restart:
//
//	next := current.Clone()
//	headers, err := config.ParseHeadersJSON(body.Headers) // 400: a *FieldError naming "headers.<Name>"
//	b := config.Backend{Name: name, URL: body.URL, Transport: body.Transport,
//		Headers: headers, AllowLinkLocal: body.AllowLinkLocal}
//	err = fromFile.CheckBinding(group, b) // 400: a reference the file does not hold for b, or at another origin
//	err = next.Put(group, b)
//	// 400: err is a *FieldError naming "group", "name", "url", "transport" or "headers..."
//	m := config.Diff(current, next) // Added, Removed, Updated backends
//	current = next
//
// A credential reference is bound to the backend and origin the config file
// gives it: CheckBinding, on the fleet as last loaded from the file, refuses
// a PUT that pairs one with another origin or brings in one the file does
// not hold; CheckRefs bounds the files and variables references may name
// (credential.Limits), at load.
//
// Put applies the rules of the file (and creates an unknown group); Delete
// reports ErrNotFound for an unknown group or backend and keeps a group that
// becomes empty. Nothing in the package does I/O except Load, which reads
// the file (and CheckRefs, which looks whether a referenced file is a link).
package config
