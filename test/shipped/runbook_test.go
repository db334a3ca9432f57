package shipped_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/test/shipped"
)

// runbookBase is where the alerts' runbooks live: the troubleshooting guide on the repository's
// main branch, where an on-call engineer's browser can open it.
const runbookBase = "https://github.com/landlord-dev/landlord/blob/main/docs/troubleshooting.md#"

func TestEveryAlertHasARunbook(t *testing.T) {
	data, err := os.ReadFile(shipped.Path("config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(shipped.Path("docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)$`).FindAllStringSubmatch(string(guide), -1) {
		headings[strings.ToLower(m[1])] = true
	}
	alerts := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			t.Run(r.Alert+" links an entry of the troubleshooting guide", func(t *testing.T) {
				if !headings[strings.ToLower(r.Alert)] {
					t.Errorf("docs/troubleshooting.md has no '### %s' entry", r.Alert)
				}
				url := r.Annotations["runbook_url"]
				anchor, ok := strings.CutPrefix(url, runbookBase)
				if !ok {
					t.Fatalf("runbook_url %q is not under %s", url, runbookBase)
				}
				// Each alert links its own entry, which says what it means and what to do, and
				// from there the condition reasons it may carry.
				if anchor != strings.ToLower(r.Alert) {
					t.Errorf("runbook_url's anchor is #%s, want the alert's own entry #%s", anchor, strings.ToLower(r.Alert))
				}
			})
		}
	}
	if alerts < 14 {
		t.Errorf("read %d alerts from config/prometheus/rules.yaml, want at least 14", alerts)
	}
}
