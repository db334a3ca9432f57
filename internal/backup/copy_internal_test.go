package backup

import "testing"

// A copy that differs from its source in any table says which, and how; one that does not says
// nothing.
func TestContentsDiffNamesEachTableThatDiffers(t *testing.T) {
	source := []TableDigest{{Table: "a", Rows: 2, Digest: "10"}, {Table: "b", Rows: 1, Digest: "7"}, {Table: "c", Rows: 0, Digest: "0"}}
	for _, tc := range []struct {
		name string
		copy []TableDigest
		want string
	}{
		{"the same contents", []TableDigest{{Table: "a", Rows: 2, Digest: "10"}, {Table: "b", Rows: 1, Digest: "7"}, {Table: "c", Rows: 0, Digest: "0"}}, ""},
		{"a row lost", []TableDigest{{Table: "a", Rows: 1, Digest: "4"}, {Table: "b", Rows: 1, Digest: "7"}, {Table: "c", Rows: 0, Digest: "0"}}, "table a has 1 rows, not 2"},
		{"a row changed", []TableDigest{{Table: "a", Rows: 2, Digest: "10"}, {Table: "b", Rows: 1, Digest: "8"}, {Table: "c", Rows: 0, Digest: "0"}}, "table b's rows differ"},
		{"a table missing and another extra", []TableDigest{{Table: "a", Rows: 2, Digest: "10"}, {Table: "b", Rows: 1, Digest: "7"}, {Table: "d", Rows: 0, Digest: "0"}}, "table c is missing; table d is extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentsDiff(source, tc.copy); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
