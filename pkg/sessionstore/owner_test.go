package sessionstore

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestOwnerKey(t *testing.T) {
	if _, err := NewOwnerKey(bytes.Repeat([]byte("k"), MinOwnerKey-1)); !errors.Is(err, ErrOwnerKey) {
		t.Fatalf("a %d-byte secret: %v, want ErrOwnerKey", MinOwnerKey-1, err)
	}
	k1, err := NewOwnerKey(bytes.Repeat([]byte("1"), MinOwnerKey))
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := NewOwnerKey(bytes.Repeat([]byte("2"), MinOwnerKey))
	var none *OwnerKey
	const alice, bob = "alice@example.com", "bob@example.com"
	a1 := k1.Hash(alice)
	if !strings.HasPrefix(a1, "hmac-sha256:") || len(a1) != len("hmac-sha256:")+64 {
		t.Fatalf("keyed owner %q", a1)
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"stable under one key", k1.Hash(alice) == a1},
		{"another key, another owner", k2.Hash(alice) != a1},
		{"not the unkeyed hash", a1 != OwnerHash(alice)},
		{"another identity, another owner", k1.Hash(bob) != a1},
		{"nil key is the unkeyed hash", none.Hash(alice) == OwnerHash(alice)},
		{"no identity, no owner", k1.Hash("") == "" && none.Hash("") == ""},
		{"owns its keyed record", k1.Owns(a1, alice)},
		{"owns the unkeyed record of earlier edges", k1.Owns(OwnerHash(alice), alice) && k1.Unkeyed(OwnerHash(alice), alice)},
		{"a keyed record is not unkeyed", !k1.Unkeyed(a1, alice)},
		{"not another identity's keyed record", !k1.Owns(k1.Hash(bob), alice)},
		{"not another identity's unkeyed record", !k1.Owns(OwnerHash(bob), alice)},
		{"not a record keyed by another key", !k1.Owns(k2.Hash(alice), alice)},
		{"a keyless edge does not own a keyed record", !none.Owns(a1, alice)},
		{"an ownerless record is the anonymous caller's", k1.Owns("", "") && !k1.Owns("", alice) && !k1.Unkeyed("", "")},
	} {
		if !c.ok {
			t.Error(c.name)
		}
	}
	secret := bytes.Repeat([]byte("s"), MinOwnerKey)
	k3, _ := NewOwnerKey(secret)
	before := k3.Hash(alice)
	secret[0] = 'x'
	if k3.Hash(alice) != before {
		t.Fatal("the key follows a change of the caller's slice")
	}
}
