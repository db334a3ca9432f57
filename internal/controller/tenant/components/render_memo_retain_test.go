package components

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRenderMemoRetain(t *testing.T) {
	cases := map[string]struct {
		keep []string
		// want is how many renderings are kept afterwards, over both namespaces.
		want int
	}{
		"components still in the spec keep their renderings":       {keep: []string{"web", "api"}, want: 3},
		"a component removed from the spec loses its rendering":    {keep: []string{"web"}, want: 2},
		"a tenant with no components left keeps none of its own":   {keep: nil, want: 1},
		"a name that was never rendered keeps nothing extra alive": {keep: []string{"worker"}, want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, fingerprint, _ := renderFixture(t)
			var m renderMemo
			objs := []*unstructured.Unstructured{obj}
			m.put("tenant-a", "web", fingerprint, objs)
			m.put("tenant-a", "api", fingerprint, objs)
			m.put("tenant-b", "web", fingerprint, objs)
			m.retain("tenant-a", func(c string) bool {
				for _, k := range tc.keep {
					if k == c {
						return true
					}
				}
				return false
			})
			if got := m.Len(); got != tc.want {
				t.Errorf("Len() = %d, want %d", got, tc.want)
			}
			if _, ok := m.get("tenant-b", "web", fingerprint); !ok {
				t.Error("another namespace's rendering was dropped")
			}
		})
	}
}
