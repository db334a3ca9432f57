package database

import "testing"

func TestQuoteLiteral(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `'plain'`},
		{"it's", `'it''s'`},
		{`back\slash`, `E'back\\slash'`},
		{`'\'`, `E'''\\'''`},
		{"", `''`},
	}
	for _, tc := range tests {
		if got := quoteLiteral(tc.in); got != tc.want {
			t.Errorf("quoteLiteral(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
