package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completions runs the completion the shell asks for at TAB (cobra's __complete) and returns the
// choices, descriptions left out, and the directive's line.
func completions(t *testing.T, name string, args ...string) ([]string, string) {
	t.Helper()
	out, _, err := run(t, name, append([]string{"__complete"}, args...)...)
	if err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	var choices []string
	directive := ""
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") {
			directive = line
			continue
		}
		choice, _, _ := strings.Cut(line, "\t")
		choices = append(choices, choice)
	}
	return choices, directive
}

// The shell completes what a command takes from the cluster the flags typed so far name: kinds,
// then the names of that kind's objects; tenants, pools and rollouts wherever a command names
// one; the versions published for the component typed; the kubeconfig's contexts. Nothing falls
// back to file names.
func TestCompletionNamesTheClustersObjects(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	ctx := context.Background()
	createTenants(t, c, "completed", []string{"completed-a", "completed-b"})
	createPool(t, c, "completed-pool", 0)
	createRollout(t, c, "completed-web-1.1.0", "web", "1.1.0", "completed-nobody")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "completed-signups"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, _, err := run(t, binaryName, append(customer("completed-pool", "--name", "completed-claim", "-n", "completed-signups"), "--kubeconfig", kubeconfig)...); err != nil {
		t.Fatal(err)
	}
	withContexts(t, kubeconfig, "completed-eu", "completed-us")
	k := "--kubeconfig=" + kubeconfig

	for _, tc := range []struct {
		name string
		args []string
		// want are choices that must be offered, and only them when exact.
		want  []string
		exact bool
	}{
		{"get completes the kinds", []string{"get", ""}, kindNames(), true},
		{"get completes a kind's names from what is typed", []string{k, "get", "tenants", "completed-"}, []string{"completed-a", "completed-b"}, true},
		{"get leaves out the names already typed", []string{k, "get", "tnt", "completed-a", "completed-"}, []string{"completed-b"}, true},
		{"describe completes pools", []string{k, "describe", "pool", "completed-"}, []string{"completed-pool"}, true},
		{"claims are completed from the namespace -n names", []string{k, "get", "claims", "-n", "completed-signups", ""}, []string{"completed-claim"}, true},
		{"status completes a tenant", []string{k, "status", "completed-"}, []string{"completed-a", "completed-b"}, true},
		{"status completes one tenant only", []string{k, "status", "completed-a", ""}, nil, true},
		{"suspend completes a tenant", []string{k, "suspend", "completed-"}, []string{"completed-a", "completed-b"}, true},
		{"rollout halt completes a rollout", []string{k, "rollout", "halt", "completed-"}, []string{"completed-web-1.1.0"}, true},
		{"rollout status completes a rollout", []string{k, "rollout", "status", ""}, []string{"completed-web-1.1.0"}, false},
		{"claim --pool completes a pool", []string{k, "claim", "--pool", "completed"}, []string{"completed-pool"}, true},
		{"rollout --component completes the published components", []string{k, "rollout", "--component", ""}, []string{"api", "web"}, true},
		{"rollout --version completes the versions of the component typed", []string{k, "rollout", "--component", "api", "--version", ""}, []string{"1.0.0", "1.1.0"}, true},
		{"--context completes the kubeconfig's contexts", []string{k, "get", "tenants", "--context", "completed-"}, []string{"completed-eu", "completed-us"}, true},
		{"-n completes the cluster's namespaces", []string{k, "get", "claims", "-n", "completed-"}, []string{"completed-signups"}, true},
		{"-o completes the output formats", []string{"get", "tenants", "-o", "w"}, []string{"wide"}, true},
		{"completion completes the shells", []string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, directive := completions(t, binaryName, tc.args...)
			if tc.exact && !slices.Equal(got, tc.want) || !tc.exact && !containsAll(got, tc.want) {
				t.Errorf("completions %q, want %q", got, tc.want)
			}
			// ShellCompDirectiveNoFileComp: a tenant's name is never a file.
			if directive != ":4" {
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
		})
	}

	t.Run("a cluster that cannot be reached completes nothing, and says nothing", func(t *testing.T) {
		got, _ := completions(t, binaryName, "--kubeconfig="+emptyKubeconfig(t), "get", "tenants", "")
		if len(got) != 0 {
			t.Errorf("completions %q", got)
		}
	})

	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run("landlordctl completion "+shell+" prints a script that completes landlordctl", func(t *testing.T) {
			out, _, err := run(t, binaryName, "completion", shell)
			if err != nil || !strings.Contains(out, "landlordctl") || !strings.Contains(out, "__complete") {
				t.Errorf("err=%v\n%.300s", err, out)
			}
		})
	}
	t.Run("kubectl landlord completion says how kubectl completes the plugin instead", func(t *testing.T) {
		_, _, err := run(t, pluginName, "completion", "bash")
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), completionExecutable) {
			t.Errorf("err = %v", err)
		}
	})
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

func TestKubectlRunsThePluginsCompletionAsKubectlCompleteLandlord(t *testing.T) {
	for _, tc := range []struct {
		argv     []string
		name     string
		wantArgs []string
	}{
		{[]string{"/usr/local/bin/landlordctl", "get", "tenants"}, binaryName, []string{"get", "tenants"}},
		{[]string{"/home/me/.krew/bin/kubectl-landlord", "get"}, pluginName, []string{"get"}},
		{[]string{"/home/me/.krew/bin/kubectl_complete-landlord", "get", "tenants", ""}, pluginName, []string{"__complete", "get", "tenants", ""}},
	} {
		t.Run(tc.argv[0]+" runs as "+tc.name, func(t *testing.T) {
			name, args := invocation(tc.argv)
			if name != tc.name || !slices.Equal(args, tc.wantArgs) {
				t.Errorf("invocation = %q %q, want %q %q", name, args, tc.name, tc.wantArgs)
			}
		})
	}
}
