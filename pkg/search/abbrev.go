package search

import "strings"

// abbreviations spell out the short forms tool names, schemas and agents
// use for common software and business words, so "repo", "repos" and
// "repository" meet on one term, and "PR" on "pull request". A word is
// looked up whole (before the split at digits, so "k8s" is found) and
// then each camelCase part. The list is general vocabulary of APIs, not
// taken from any one catalog.
var abbreviations = map[string]string{
	"addr": "address", "admin": "administrator", "admins": "administrators",
	"app": "application", "apps": "applications", "arg": "argument", "args": "arguments",
	"attr": "attribute", "attrs": "attributes", "auth": "authentication",
	"cfg": "configuration", "config": "configuration", "configs": "configurations",
	"db": "database", "dbs": "databases", "dep": "dependency", "deps": "dependencies",
	"desc": "description", "dest": "destination", "dev": "development",
	"dir": "directory", "dirs": "directories", "dm": "direct message", "dms": "direct messages",
	"env": "environment", "envs": "environments", "img": "image", "imgs": "images",
	"info": "information", "k8s": "kubernetes", "kube": "kubernetes",
	"mgmt": "management", "mr": "merge request", "mrs": "merge requests",
	"msg": "message", "msgs": "messages", "notif": "notification", "notifs": "notifications",
	"ns": "namespace", "num": "number", "oncall": "on call", "org": "organization",
	"orgs": "organizations", "param": "parameter", "params": "parameters",
	"perf": "performance", "pkg": "package", "pkgs": "packages", "pr": "pull request",
	"prs": "pull requests", "prod": "production", "proj": "project", "pwd": "password",
	"qty": "quantity", "repo": "repository", "repos": "repositories", "sev": "severity",
	"src": "source", "stats": "statistics", "temp": "temporary", "tmp": "temporary",
	"txn": "transaction", "txns": "transactions",
	"tz": "time zone", "var": "variable", "vars": "variables", "vm": "virtual machine",
	"vms": "virtual machines",
}

// maxAbbreviationLen is the length of the longest key of abbreviations.
var maxAbbreviationLen = func() int {
	n := 0
	for k := range abbreviations {
		n = max(n, len(k))
	}
	return n
}()

// expandAbbreviation appends the terms of the long form of the lower-case
// word w and reports whether w is an abbreviation.
func expandAbbreviation(dst []string, w string) ([]string, bool) {
	long, ok := abbreviations[w]
	if !ok {
		return dst, false
	}
	for part := range strings.SplitSeq(long, " ") {
		if !IsStopWord(part) {
			dst = append(dst, Stem(part))
		}
	}
	return dst, true
}
