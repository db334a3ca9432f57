package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// landlordctlClaim runs the CLI and returns what it printed on stdout and on stderr.
func landlordctlClaim(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newRootCommand(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	cmd.SetContext(context.Background())
	err := cmd.Execute()
	return stdout.String(), stderr.String(), err
}

// customer is the flags of a well-formed claim, after which a test adds its own.
func customer(pool string, more ...string) []string {
	return append([]string{"claim", "--pool", pool, "--org", "Acme Inc.", "--email", "ops@acme.example.com"}, more...)
}

func TestLabelsForTheTenantAreKeyValuePairsOutsideLandlordsOwnKeys(t *testing.T) {
	got, err := parseClaimLabels([]string{"plan=trial", "example.com/region=eu", "note=", "plan=trial"})
	want := map[string]string{"plan": "trial", "example.com/region": "eu", "note": ""}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("labels = %v, %v; want %v", got, err, want)
	}

	many := make([]string, maxClaimLabels+1)
	for i := range many {
		many[i] = fmt.Sprintf("l%d=v", i)
	}
	if _, err := parseClaimLabels(many); err == nil || !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("%d labels: err = %v", len(many), err)
	}
}

func TestBadClaimFlagsAreRefusedBeforeAnyClusterIsRead(t *testing.T) {
	kubeconfig := emptyKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"claim", "--org", "Acme Inc.", "--email", "ops@acme.example.com"}, `required flag(s) "pool"`},
		{[]string{"claim", "--pool", "standard"}, `required flag(s) "email", "org"`},
		{customer("standard", "--label", "tenancy.landlord.dev/allocated=false"), "keys under tenancy.landlord.dev/ are reserved for Landlord"},
		{customer("standard", "--label", "plan"), "want KEY=VALUE"},
		{customer("standard", "--label", "=trial"), "want KEY=VALUE"},
		{customer("standard", "--label", "bad key=x"), "key:"},
		{customer("standard", "--label", "plan=-trial"), "value:"},
		{customer("standard", "--label", "plan=trial", "--label", "plan=paid"), "given twice"},
		{customer("Standard_Pool"), "--pool"},
		{customer(strings.Repeat("p", 41)), "--pool"},
		{customer("standard", "--email", "not an address"), "--email"},
		{customer("standard", "--org", "  "), "--org"},
		{customer("standard", "--name", "Acme"), "--name"},
		{customer("standard", "--namespace", "Signups"), "--namespace"},
		{customer("standard", "--wait", "--timeout", "0s"), "--timeout"},
		{customer("standard", "--context", "elsewhere"), "no context"},
		{customer("standard", "--kubeconfig", "/none"), "loading kubeconfig"},
	} {
		args := tc.args
		if !slices.Contains(args, "--kubeconfig") {
			args = append(args, "--kubeconfig", kubeconfig)
		}
		out, _, err := landlordctlClaim(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
			t.Errorf("%q: err=%v, out=%q; want an error with %q", args, err, out, tc.want)
		}
	}
}

func TestWaitingEndsAtOnceOnADeletedClaimAndAtTheTimeoutOnOneNobodyAnswered(t *testing.T) {
	claim := func(name string, status tenancyv1alpha1.TenantClaimStatus) *tenancyv1alpha1.TenantClaim {
		return &tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "signups", Name: name},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "standard"},
			Status:     status,
		}
	}
	unanswered := claim("unanswered", tenancyv1alpha1.TenantClaimStatus{})
	// The wait watches the claim by name, a field selector the fake client answers from an index.
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(unanswered).
		WithIndex(&tenancyv1alpha1.TenantClaim{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build()

	for _, tc := range []struct {
		claim   *tenancyv1alpha1.TenantClaim
		want    string
		atOnce  bool
		timeout time.Duration
	}{
		{claim("deleted", tenancyv1alpha1.TenantClaimStatus{}), "claim signups/deleted was deleted before it was bound", true, time.Minute},
		{unanswered, "claim signups/unanswered not bound within 300ms: it has no status yet; is the Landlord operator running? (the claim is left in place", false, 300 * time.Millisecond},
	} {
		start := time.Now()
		_, err := waitBound(context.Background(), c, tc.claim, tc.timeout, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.claim.Name, err, tc.want)
		}
		if took := time.Since(start); tc.atOnce && took > time.Second || !tc.atOnce && took < tc.timeout {
			t.Errorf("%s: took %s", tc.claim.Name, took)
		}
	}
}

// ---- Claims against the shared control plane and operator.

// createPool creates a pool of minimal spares (no databases, no components), which are Ready as
// soon as their operator made their namespace. Like the rollout tests' tenants, pools, claims and
// tenants stay until the shared control plane is discarded; each test names its own.
func createPool(t *testing.T, c client.Client, name string, replicas int32) {
	t.Helper()
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantPoolSpec{
			Replicas: replicas,
			Template: tenancyv1alpha1.TenantTemplate{Labels: map[string]string{"pool-test": name}},
			Claims:   tenancyv1alpha1.TenantPoolClaims{AllowedLabels: []tenancyv1alpha1.AllowedClaimLabel{{Key: "plan"}}},
		},
	}
	if err := c.Create(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
}

// waitPool waits until the pool reports ready Ready spares, none provisioning and allocated
// tenants handed out, and returns the names of its Ready spares.
func waitPool(t *testing.T, c client.Client, name string, ready, allocated int32) []string {
	t.Helper()
	var spares []string
	waitFor(t, 30*time.Second, "pool "+name, func() error {
		pool := &tenancyv1alpha1.TenantPool{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, pool); err != nil {
			return err
		}
		if s := pool.Status; s.ObservedGeneration != pool.Generation || s.Ready != ready || s.Provisioning != 0 || s.Allocated != allocated {
			return fmt.Errorf("status %+v, want %d ready and %d allocated", s, ready, allocated)
		}
		tenants := &tenancyv1alpha1.TenantList{}
		if err := c.List(context.Background(), tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: name}); err != nil {
			return err
		}
		spares = nil
		for _, tenant := range tenants.Items {
			if tenant.Labels[tenancyv1alpha1.AllocatedLabel] != "true" && tenant.DeletionTimestamp.IsZero() {
				spares = append(spares, tenant.Name)
			}
		}
		if len(spares) != int(ready) {
			return fmt.Errorf("spares %v, want %d", spares, ready)
		}
		return nil
	})
	return spares
}

func TestAClaimWithWaitPrintsTheNameOfAFormerSpareNowStampedWithTheCustomerAndThePoolRefills(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createPool(t, c, "signups", 2)
	spares := waitPool(t, c, "signups", 2, 0)

	stdout, stderr, err := landlordctlClaim(t, append(customer("signups", "--label", "plan=trial", "--name", "acme", "--wait", "--timeout", "30s"),
		"--kubeconfig", kubeconfig)...)
	if err != nil {
		t.Fatalf("claim: %v\nstderr: %s", err, stderr)
	}
	name := strings.TrimSuffix(stdout, "\n")
	if strings.Contains(name, "\n") || !slices.Contains(spares, name) {
		t.Fatalf("stdout = %q, want one line naming one of the spares %v", stdout, spares)
	}
	cfg := config.Default()
	bound := regexp.MustCompile(`(?m)^claim default/acme bound tenant ` + regexp.QuoteMeta(name) +
		` \(namespace ` + regexp.QuoteMeta(cfg.NamespaceName(name)) + `\) in \d+(\.\d+)?m?s$`)
	if !bound.MatchString(stderr) {
		t.Errorf("stderr = %q, want the namespace and how long the bind took", stderr)
	}

	tenant := getTenant(t, c, name)
	for k, v := range map[string]string{tenancyv1alpha1.AllocatedLabel: "true", "plan": "trial", tenancyv1alpha1.PoolLabel: "signups"} {
		if tenant.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, tenant.Labels[k], v, tenant.Labels)
		}
	}
	for k, v := range map[string]string{
		tenancyv1alpha1.OrganizationAnnotation: "Acme Inc.",
		tenancyv1alpha1.EmailAnnotation:        "ops@acme.example.com",
		tenancyv1alpha1.ClaimAnnotation:        "default/acme",
	} {
		if tenant.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, tenant.Annotations[k], v)
		}
	}
	if len(tenant.OwnerReferences) != 0 {
		t.Errorf("the allocated tenant still has owners %+v", tenant.OwnerReferences)
	}

	refilled := waitPool(t, c, "signups", 2, 1)
	if slices.Contains(refilled, name) {
		t.Errorf("the claimed tenant %s is still counted a spare: %v", name, refilled)
	}
}

func TestAClaimWithAReservedLabelKeyIsRefusedBeforeAnythingIsCreatedAsTheAPIWouldRefuseIt(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	stdout, _, err := landlordctlClaim(t, append(customer("signups", "--label", "tenancy.landlord.dev/allocated=true", "--name", "sneaky", "--wait"),
		"--kubeconfig", kubeconfig)...)
	if err == nil || !strings.Contains(err.Error(), `--label "tenancy.landlord.dev/allocated=true": keys under tenancy.landlord.dev/ are reserved for Landlord`) || stdout != "" {
		t.Errorf("err = %v, stdout = %q", err, stdout)
	}
	key := client.ObjectKey{Namespace: "default", Name: "sneaky"}
	if err := c.Get(context.Background(), key, &tenancyv1alpha1.TenantClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("claim default/sneaky: %v, want not found", err)
	}

	claim := &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: tenancyv1alpha1.TenantClaimSpec{
			Pool: "signups", Labels: map[string]string{tenancyv1alpha1.AllocatedLabel: "true"},
		},
	}
	if err := c.Create(context.Background(), claim); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("the API accepted or refused otherwise: %v", err)
	}
}

func TestAClaimWithoutWaitPrintsItsGeneratedNamespaceAndNameAndReturnsAtOnce(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	stdout, stderr, err := landlordctlClaim(t, append(customer("no-such-pool", "--label", "plan=trial"), "--kubeconfig", kubeconfig)...)
	if err != nil || !regexp.MustCompile(`^default/claim-[a-z0-9]+\n$`).MatchString(stdout) || stderr != "" {
		t.Fatalf("err = %v, stdout = %q, stderr = %q", err, stdout, stderr)
	}
	claim := &tenancyv1alpha1.TenantClaim{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: strings.TrimPrefix(strings.TrimSpace(stdout), "default/")}, claim); err != nil {
		t.Fatal(err)
	}
	want := tenancyv1alpha1.TenantClaimSpec{Pool: "no-such-pool", Organization: "Acme Inc.", Email: "ops@acme.example.com", Labels: map[string]string{"plan": "trial"}}
	if !reflect.DeepEqual(claim.Spec, want) {
		t.Errorf("spec = %+v, want %+v", claim.Spec, want)
	}
}

func TestAClaimOnAPoolThatDoesNotExistFailsAtTheTimeoutWithPoolNotFound(t *testing.T) {
	_, kubeconfig := sharedCluster(t)
	start := time.Now()
	// Long enough for the operator, however busy, to say why the claim waits.
	stdout, stderr, err := landlordctlClaim(t, append(customer("no-such-pool", "--wait", "--timeout", "10s"), "--kubeconfig", kubeconfig)...)
	want := regexp.MustCompile(`^claim default/claim-[a-z0-9]+ not bound within 10s: Pending: PoolNotFound: TenantPool no-such-pool does not exist `)
	if err == nil || !want.MatchString(err.Error()) || stdout != "" {
		t.Errorf("err = %v, stdout = %q", err, stdout)
	}
	if pending := regexp.MustCompile(`(?m)^claim default/claim-[a-z0-9]+: Pending: PoolNotFound: TenantPool no-such-pool does not exist$`); !pending.MatchString(stderr) {
		t.Errorf("stderr = %q, want the claim's reason while it waited", stderr)
	}
	if took := time.Since(start); took < 10*time.Second || took > 25*time.Second {
		t.Errorf("took %s, want about --timeout 10s", took)
	}
}
