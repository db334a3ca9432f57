package apply_test

import (
	"testing"

	"github.com/landlord-dev/landlord/internal/apply"
)

func TestContains(t *testing.T) {
	cases := map[string]struct {
		live, desired any
		want          bool
	}{
		"equal scalars match":                  {"a", "a", true},
		"different scalars differ":             {"a", "b", false},
		"a nil desired value matches anything": {"a", nil, true},
		"extra live keys are someone else's": {
			map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true,
		},
		"a missing key differs": {
			map[string]any{"b": "2"}, map[string]any{"a": "1"}, false,
		},
		"a missing key with an empty desired value matches": {
			map[string]any{}, map[string]any{"a": "", "m": map[string]any{}, "l": []any{}}, true,
		},
		"nested maps compare recursively": {
			map[string]any{"m": map[string]any{"x": int64(1), "y": int64(2)}}, map[string]any{"m": map[string]any{"x": int64(2)}}, false,
		},
		"lists must have the same length": {
			[]any{"a", "b"}, []any{"a"}, false,
		},
		"list elements may carry server defaults": {
			[]any{map[string]any{"name": "a", "default": true}}, []any{map[string]any{"name": "a"}}, true,
		},
		"list order matters": {
			[]any{"b", "a"}, []any{"a", "b"}, false,
		},
		"a map where a scalar lives differs": {
			"x", map[string]any{"a": "1"}, false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := apply.Contains(tc.live, tc.desired); got != tc.want {
				t.Errorf("Contains(%v, %v) = %v, want %v", tc.live, tc.desired, got, tc.want)
			}
		})
	}
}
