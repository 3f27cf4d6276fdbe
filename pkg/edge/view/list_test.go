package view

import (
	"fmt"
	"testing"
)

// Lists are paged with keyset cursors.
func TestPaginate(t *testing.T) {
	list := make([]string, 2500)
	for i := range list {
		list[i] = fmt.Sprintf("t%04d", i)
	}
	id := func(s string) string { return s }
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := Paginate(list, cursor, id)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v", pages, err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(all) != fmt.Sprint(list) {
		t.Fatalf("pages do not add up: %d items", len(all))
	}
	if _, _, err := Paginate(list, "!!", id); err == nil {
		t.Fatal("bad cursor accepted")
	}
	if page, next, _ := Paginate([]string(nil), "", id); page == nil || len(page) != 0 || next != "" {
		t.Fatalf("empty list: %v %q", page, next)
	}
}
