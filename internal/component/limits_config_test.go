package component_test

import (
	"strings"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/component"
)

// The render deadline stops a template that stays within every other limit but
// takes too long, here many iterations of expensive work each.
func TestATemplatePastItsDeadlineIsStopped(t *testing.T) {
	limits := component.DefaultLimits()
	limits.Timeout = 100 * time.Millisecond
	tmpl := testTemplate(configMapHead + "'{{ $s := repeat 100000 \"x\" }}{{ range 900000 }}{{ $h := sha256sum $s }}{{ end }}'\n")
	start := time.Now()
	_, err := component.RenderWithin(tmpl, component.NewInput(testTenant(), "tenant-acme", tmpl), nil, limits)
	if err == nil || !strings.Contains(err.Error(), "ran longer than 100ms") || !strings.Contains(err.Error(), "components.render.timeout") {
		t.Fatalf("want the deadline named, got %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the render stopped %s after it started, long after its deadline", took)
	}
}

func TestLimitsAreConfigurable(t *testing.T) {
	big := configMapHead + "'{{ range 5000 }}xx{{ end }}'\n"
	for _, tc := range []struct {
		name   string
		limits func(*component.Limits)
		want   string
	}{
		{"a smaller output limit refuses a render the default allows", func(l *component.Limits) { l.MaxOutputBytes = 1000 }, "larger than 1000 bytes"},
		{"a smaller iteration budget refuses a render the default allows", func(l *component.Limits) { l.MaxIterations = 100 }, "more than 100 range iterations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := testTemplate(big)
			in := component.NewInput(testTenant(), "tenant-acme", tmpl)
			if _, err := component.RenderWithin(tmpl, in, nil, component.DefaultLimits()); err != nil {
				t.Fatalf("the default limits refuse it: %v", err)
			}
			limits := component.DefaultLimits()
			tc.limits(&limits)
			if _, err := component.RenderWithin(tmpl, in, nil, limits); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}
