package config_test

import (
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/config"
)

// The admission policy compares a pod's tolerations with isolation.tolerations as strings, so an
// entry not written the way it writes them would silently match nothing: such a file is refused,
// naming the entry.
func TestTheSchedulingAllowancesAreValidated(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		error string
	}{
		{"a key alone is accepted", "isolation: {tolerations: [example.com/batch]}", ""},
		{"a key, value and effect are accepted", "isolation: {tolerations: ['dedicated=batch:NoExecute'], priorityClasses: [tenant-batch]}", ""},
		{"an unknown effect is refused", "isolation: {tolerations: ['nvidia.com/gpu:NoScheduling']}", `isolation.tolerations[0]: "nvidia.com/gpu:NoScheduling" has effect "NoScheduling"`},
		{"an empty key is refused", "isolation: {tolerations: [':NoSchedule']}", `isolation.tolerations[0]: ":NoSchedule" has no taint key`},
		{"a value that is no label value is refused", "isolation: {tolerations: ['dedicated=a b']}", `isolation.tolerations[0]: "dedicated=a b" has no taint value`},
		{"a toleration listed twice is refused", "isolation: {tolerations: [a, a]}", `isolation.tolerations[1]: "a" is listed twice`},
		{"a priority class that is no name is refused", "isolation: {priorityClasses: [Batch_1]}", `isolation.priorityClasses[0]: "Batch_1" is not a PriorityClass name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.file))
			switch {
			case tc.error == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
				t.Errorf("error = %v, want one containing %s", err, tc.error)
			}
		})
	}
}
