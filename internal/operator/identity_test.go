package operator_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The identity Landlord's admission policies exempt is configuration. A second process run by
// someone else (`make run CLUSTER=current` on a workstation, beside the installed operator) used
// to rewrite the policies to exempt itself: the installed operator could then no longer set its
// own labels or bind claims, the administrator's user was confined, and the two processes
// rewrote each other's policies for as long as both ran. Now the second process refuses to start,
// and the policies keep exempting the configured operator.
func TestASecondProcessUnderAnotherIdentityCannotRewriteWhoThePoliciesExempt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, store := ownEnv(t)
	cfg := config.Default()
	g.Expect(cfg.Controller.Identity).To(Equal(testenv.OperatorUser), "the default identity is the shipped ServiceAccount")

	first, err := env.StartOperator(cfg, store)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = first.Stop() })
	g.Expect(exempted(ctx, env)).To(Equal(testenv.OperatorUser))

	// An administrator's own user, allowed everything, with the same configuration.
	second, err := operator.New(env.As("platform-admin", "system:masters"), operator.Options{
		Config: cfg, Store: store, MetricsAddr: "0", ProbeAddr: "0", AnotherInProcess: true,
	})
	if err == nil {
		// What must not happen: started, it takes the policies over.
		startCtx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		go func() { _ = second.Start(startCtx) }()
		g.Eventually(func() (string, error) { return exempted(ctx, env) }).WithTimeout(timeout).ShouldNot(Equal(testenv.OperatorUser),
			"a second process under another identity starts, yet leaves the policies alone")
		t.Fatalf("a process known to the API server as platform-admin started with controller.identity %s, and the policies now exempt %s",
			cfg.Controller.Identity, must(exempted(ctx, env)))
	}
	g.Expect(err).To(MatchError(And(ContainSubstring(`"platform-admin"`), ContainSubstring("controller.identity"), ContainSubstring(testenv.OperatorUser))))
	g.Expect(exempted(ctx, env)).To(Equal(testenv.OperatorUser), "the policies exempt the configured operator")
}

// An operator configured with another identity (a renamed ServiceAccount) that runs as that
// identity writes policies that exempt it: the exempted user comes from the configuration, and
// the process only checks it is that user.
func TestThePoliciesExemptTheConfiguredIdentity(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, store := ownEnv(t)
	cfg := config.Default()
	cfg.Controller.Identity = "system:serviceaccount:platform:landlord"
	// The renamed ServiceAccount holds the operator's ClusterRole, as a kustomize overlay or the
	// chart would bind it.
	op, err := operator.New(env.As(cfg.Controller.Identity, "system:masters"), operator.Options{
		Config: cfg, Store: store, MetricsAddr: "0", ProbeAddr: "0", AnotherInProcess: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	startCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = op.Start(startCtx) }()
	g.Eventually(func() (string, error) { return exempted(ctx, env) }).WithTimeout(timeout).Should(Equal(cfg.Controller.Identity))
}

// exempted is the user the tenant label policy lets through, read back from the API server: its
// match condition is `request.userInfo.username != '<user>'`.
func exempted(ctx context.Context, env *testenv.Env) (string, error) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := env.AdminClient.Get(ctx, client.ObjectKey{Name: policy.TenantLabels}, p); err != nil {
		return "", err
	}
	for _, mc := range p.Spec.MatchConditions {
		if mc.Name == "not-the-operator" {
			_, quoted, _ := strings.Cut(mc.Expression, "!= ")
			return strings.Trim(quoted, "'"), nil
		}
	}
	return "", nil
}

func must(s string, _ error) string { return s }
