package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// runsVersion fails the test unless each tenant reports component api at version.
func runsVersion(t *testing.T, c client.Client, version string, names ...string) {
	t.Helper()
	for _, name := range names {
		tenant := getTenant(t, c, name)
		got := ""
		for _, st := range tenant.Status.Components {
			if st.Name == "api" {
				got = st.Version
			}
		}
		if got != version {
			t.Errorf("tenant %s runs api %q, want %q", name, got, version)
		}
	}
}

func TestARolloutTheOperatorRunsIsCreatedFollowedHaltedAndResumed(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	names := []string{"object-a", "object-b", "object-c"}
	followingTenants(t, c, "object", names, "api=1.0.0")
	t.Cleanup(func() {
		for _, n := range names {
			_ = c.Delete(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		for _, n := range []string{"api-1.1.0", "api-back"} {
			_ = c.Delete(context.Background(), &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
	rollout := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		out, err := landlordctlRollout(t, append([]string{"--kubeconfig", kubeconfig, "rollout"}, args...)...)
		t.Logf("\n%s", out)
		return out, err
	}

	t.Run("--server-side, what every rollout is now, is accepted with a warning and changes nothing", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "--kubeconfig", kubeconfig, "rollout", "--component", "api", "--version", "1.1.0",
			"--server-side", "--selector", "group=object", "--dry-run")
		if err != nil || !strings.Contains(out, "ComponentRollout api-1.1.0 would move api to 1.1.0: 3 tenants") {
			t.Fatalf("out %q, err %v", out, err)
		}
		if want := "Flag --server-side has been deprecated, every rollout is now a ComponentRollout the operator runs"; !strings.Contains(stderr+out, want) {
			t.Errorf("no warning %q:\nstdout %s\nstderr %s", want, out, stderr)
		}
	})

	t.Run("a dry run creates nothing", func(t *testing.T) {
		out, err := rollout(t, "--component", "api", "--version", "1.1.0", "--selector", "group=object", "--dry-run")
		if err != nil || !strings.Contains(out, ": nothing was changed") {
			t.Fatalf("err = %v", err)
		}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "api-1.1.0"}, &tenancyv1alpha1.ComponentRollout{}); err == nil {
			t.Error("a dry run created the rollout")
		}
	})

	t.Run("the rollout is created and followed wave by wave until it is done", func(t *testing.T) {
		out, err := rollout(t, "--component", "api", "--version", "1.1.0", "--selector", "group=object", "--batch", "2", "--canaries", "object-c")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^context \S+: ComponentRollout api-1\.1\.0 created \(api → 1\.1\.0\)$`),
			regexp.MustCompile(`(?m)^context \S+: api-1\.1\.0: wave 1/2 started: object-c$`),
			regexp.MustCompile(`(?m)^context \S+: api-1\.1\.0: wave 2/2 started: object-a, object-b$`),
			regexp.MustCompile(`(?m)^context \S+: api-1\.1\.0: wave 2/2 done: 2 done, 0 failed, 0 skipped$`),
			regexp.MustCompile(`(?m)^context \S+: api-1\.1\.0: done: 2 of 2 waves released; 3 tenants done`),
		} {
			if !want.MatchString(out) {
				t.Errorf("output lacks %s", want)
			}
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 6 {
			t.Errorf("%d lines, want 6: each wave started and done once, then done", len(lines))
		}
		runsVersion(t, c, "1.1.0", names...)
	})

	t.Run("a rerun follows the rollout it created", func(t *testing.T) {
		out, err := rollout(t, "--component", "api", "--version", "1.1.0", "--selector", "group=object", "--batch", "2", "--canaries", "object-c")
		if err != nil || !strings.Contains(out, "ComponentRollout api-1.1.0 exists; following it") || !strings.Contains(out, ": done: ") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("a rerun that asks for another rollout under the same name is refused", func(t *testing.T) {
		_, err := rollout(t, "--component", "api", "--version", "1.1.0", "--selector", "group=other")
		if want := "ComponentRollout api-1.1.0 exists with another spec (api → 1.1.0, selector group=object, strategy batch 2, canaries object-c"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})

	t.Run("a halted rollout is reported as halted, and resume lets it finish", func(t *testing.T) {
		// A rollback to 1.0.0: it takes the tenants once no rollout of a higher version chooses
		// them, and deleting api-1.1.0 moves none of them back.
		if err := c.Delete(context.Background(), &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: "api-1.1.0"}}); err != nil {
			t.Fatal(err)
		}
		// Halted from the start, as Git may declare it: no wave starts.
		back := &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: "api-back"},
			Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "api", Version: "1.0.0", Halted: true, Rollback: true,
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"group": "object"}}},
		}
		if err := c.Create(context.Background(), back); err != nil {
			t.Fatal(err)
		}
		_, err := rollout(t, "status", "api-back")
		if want := "ComponentRollout api-back is halted (spec.halted): landlordctl rollout resume api-back"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("status: %v, want %q", err, want)
		}
		runsVersion(t, c, "1.1.0", names...)
		if out, err := rollout(t, "resume", "api-back"); err != nil || out != "componentrollout/api-back resumed\n" {
			t.Fatalf("resume: %q, %v", out, err)
		}
		out, err := rollout(t, "status", "api-back")
		if err != nil || !strings.Contains(out, "api-back: done: 3 of 3 waves released") {
			t.Fatalf("status: %v", err)
		}
		runsVersion(t, c, "1.0.0", names...)
	})

	t.Run("--no-wait returns once the rollout is created", func(t *testing.T) {
		out, err := rollout(t, "--component", "api", "--version", "1.1.0", "--selector", "group=nobody", "--name", "api-nowait", "--no-wait")
		if err != nil || !strings.Contains(out, "ComponentRollout api-nowait created") || strings.Contains(out, "wave") || strings.Contains(out, "done:") {
			t.Fatalf("out %q, err %v", out, err)
		}
		if err := c.Delete(context.Background(), &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: "api-nowait"}}); err != nil {
			t.Errorf("the rollout was not created: %v", err)
		}
	})

	t.Run("--rollback creates a rollback", func(t *testing.T) {
		out, err := rollout(t, "--component", "api", "--version", "1.0.0", "--selector", "group=nobody", "--name", "api-rollback", "--rollback", "--no-wait")
		if err != nil || !strings.Contains(out, "ComponentRollout api-rollback created") {
			t.Fatalf("out %q, err %v", out, err)
		}
		ro := &tenancyv1alpha1.ComponentRollout{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "api-rollback"}, ro); err != nil || !ro.Spec.Rollback {
			t.Errorf("spec.rollback = %t, %v", ro.Spec.Rollback, err)
		}
		_ = c.Delete(context.Background(), ro)
	})

	t.Run("halt sets spec.halted", func(t *testing.T) {
		if out, err := rollout(t, "halt", "api-back"); err != nil || out != "componentrollout/api-back halted\n" {
			t.Fatalf("halt: %q, %v", out, err)
		}
		ro := &tenancyv1alpha1.ComponentRollout{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "api-back"}, ro); err != nil || !ro.Spec.Halted {
			t.Fatalf("spec.halted = %v, %v", ro.Spec.Halted, err)
		}
		if _, err := rollout(t, "halt", "no-such-rollout"); err == nil || !strings.Contains(err.Error(), `rollout "no-such-rollout" not found`) {
			t.Errorf("halt of a missing rollout: %v", err)
		}
	})

	t.Run("halt warns when a GitOps controller applies spec.halted too", func(t *testing.T) {
		apply := []byte(`{"apiVersion":"tenancy.landlord.dev/v1alpha1","kind":"ComponentRollout","metadata":{"name":"api-back"},` +
			`"spec":{"component":"api","version":"1.0.0","selector":{"matchLabels":{"group":"object"}},"rollback":true,"halted":false}}`)
		if err := c.Patch(context.Background(), &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: "api-back"}},
			client.RawPatch(types.ApplyPatchType, apply), client.FieldOwner("kustomize-controller"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		out, err := rollout(t, "halt", "api-back")
		if err != nil || !strings.Contains(out, "warning: kustomize-controller also sets spec.halted of componentrollout/api-back") {
			t.Fatalf("halt: %q, %v", out, err)
		}
	})

	t.Run("status of a rollout that does not exist says so", func(t *testing.T) {
		_, err := rollout(t, "status", "no-such-rollout")
		if want := `rollout "no-such-rollout" not found`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
}
