package search

import (
	"math"
	"testing"
)

func TestActionOf(t *testing.T) {
	for _, tt := range []struct {
		doc  Doc
		want string
	}{
		{Doc{Name: "github_create_issue"}, "creat"},
		{Doc{Name: "k8s_get_pod_logs"}, "get"},
		{Doc{Name: "listFiles"}, "list"},
		{Doc{Name: "billing.searchInvoices"}, "search"},
		{Doc{Name: "deleteRepo", Group: "git"}, "delet"},
		{Doc{Name: "web_search"}, "search"},
		{Doc{Name: "fs"}, "fs"},
		{Doc{Name: "github_"}, ""},
		{Doc{Name: ""}, ""},
	} {
		if got := actionOf(tt.doc); got != tt.want {
			t.Errorf("actionOf(%+v) = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

func TestFamilyOf(t *testing.T) {
	r := resolve(nil)
	for w, want := range map[string]int8{
		"get": 0, "list": 0, "search": 0, "read": 0, "find": 0, "show": 0, "fetch": 0, "display": 0,
		"create": 1, "add": 1, "make": 1, "new": 1,
		"update": 2, "edit": 2, "modify": 2, "change": 2,
		"delete": 3, "remove": 3, "erase": 3,
		"send": 4, "post": 4, "run": 5, "execute": 5, "launch": 5,
		"merge": noFamily, "start": noFamily, "customer": noFamily, "reply": noFamily,
	} {
		if got := r.familyOf(Stem(w)); got != want {
			t.Errorf("familyOf(%q) = %d, want %d", w, got, want)
		}
	}
	if f := r.queryFamily(Tokenize("which pods are failing"), true); f != questionFamily {
		t.Errorf("a question's family = %d, want %d", f, questionFamily)
	}
	if f := r.queryFamily(nil, false); f != noFamily {
		t.Errorf("an empty query's family = %d", f)
	}
}

func TestIntentFactor(t *testing.T) {
	r := resolve(&Options{IntentWeight: 0.5, IntentPenalty: 2})
	for _, tt := range []struct {
		query, tool int8
		want        float64
	}{
		{0, 0, 1.5}, {1, 0, 1 - maxIntentPenalty}, {noFamily, 0, 1}, {0, noFamily, 1}, {noFamily, noFamily, 1},
	} {
		if got := r.intentFactor(tt.query, tt.tool); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("intentFactor(%d, %d) = %v, want %v", tt.query, tt.tool, got, tt.want)
		}
	}
}

// TestIntentRanks: of two tools of one backend that match a query's
// words alike, the one whose action is of the query's family ranks
// first, and the intent options decide it.
func TestIntentRanks(t *testing.T) {
	docs := []Doc{
		{Name: "crm_create_customer", Description: "Create a customer with an email address; the customer's email must be unique."},
		{Name: "crm_list_customers", Description: "Customers, filtered by email address."},
		{Name: "crm_delete_customer", Description: "Delete a customer record by email address."},
		{Name: "chat_send_message", Description: "Send a message to a channel."},
	}
	for _, tt := range []struct {
		query, want string
	}{
		{"find the customer with email bob@example.com", "crm_list_customers"},
		{"which customer has the email bob@example.com", "crm_list_customers"},
		{"add a customer with email bob@example.com", "crm_create_customer"},
		{"remove the customer with email bob@example.com", "crm_delete_customer"},
	} {
		hits := Build(docs, nil).Search(tt.query, 3)
		if len(hits) == 0 || hits[0].Name != tt.want {
			t.Errorf("%q: got %v, want %s first", tt.query, hitNames(hits, 3), tt.want)
		}
	}
	// Without the intent factors the tools' own words decide.
	q := "find the customer with email bob@example.com"
	off := Build(docs, &Options{IntentWeight: -1, IntentPenalty: -1}).Search(q, 3)
	if len(off) == 0 || off[0].Name != "crm_create_customer" {
		t.Errorf("%q without intent: got %v, want crm_create_customer first", q, hitNames(off, 3))
	}
}
