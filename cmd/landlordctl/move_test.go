package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// landlordctlIn runs landlordctl with ctx, as a person would until they press Ctrl-C.
func landlordctlIn(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := newRootCommand(&out)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	err := cmd.Execute()
	return out.String(), err
}

// Two clusters on this machine share one PostgreSQL server and one secret store: the shared
// whole cluster (eu-1) and a second one (eu-2) with an operator of its own. A tenant with a
// database and a shared secret moves from eu-1 to eu-2: the move is refused while eu-2 lacks the
// DatabaseServer or reads another store; a move stopped after the source is archived is finished
// by running it again; the tenant's database keeps its password and its data, and the source
// keeps the tenant Archived.
func TestMoveTakesATenantToAnotherClusterWithItsData(t *testing.T) {
	ctx := context.Background()
	src, srcPath := sharedCluster(t)
	cfg := config.Default()
	testenv.NeedCluster(t)
	dstEnv, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dstEnv.Stop() })
	dst := dstEnv.AdminClient
	store, err := secret.NewFileStore(fleet.dir, filepath.Join(fleet.dir, "key.json"))
	if err != nil {
		t.Fatal(err)
	}
	dstOp, err := dstEnv.StartOperator(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dstOp.Stop() })
	pg, err := dbtest.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	register := func(env *testenv.Env) {
		t.Helper()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Databases.CredentialsNamespace}}
		if err := env.AdminClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := env.RegisterDatabaseServer(ctx, cfg.Databases.CredentialsNamespace, "pg-move", pg); err != nil {
			t.Fatal(err)
		}
	}
	register(fleet.env)
	kubeconfig := fleetKubeconfig(t, map[string]*clientcmdapi.Config{
		"eu-1": loadKubeconfig(t, srcPath), "eu-2": loadKubeconfig(t, writeKubeconfig(t, dstEnv)),
	})
	move := func(ctx context.Context, extra ...string) (string, error) {
		t.Helper()
		out, err := landlordctlIn(ctx, append([]string{"--kubeconfig", kubeconfig, "move", "mover", "--from", "eu-1", "--to", "eu-2", "--timeout", "1m"}, extra...)...)
		t.Logf("\n%s", out)
		return out, err
	}

	// The tenant, with a database holding a row and a secret shared from the store.
	shared := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Secrets.TemplateNamespace, Name: "move-shared", Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
		Data:       map[string][]byte{"token": []byte("s3cret")},
	}
	if err := store.Put(ctx, shared); err != nil {
		t.Fatal(err)
	}
	fleet.op.TemplateSync.Trigger()
	dstOp.TemplateSync.Trigger()
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "mover", Labels: map[string]string{"plan": "gold"}},
		Spec: tenancyv1alpha1.TenantSpec{Organization: "Mover Inc.", Email: "ops@mover.example.com",
			Databases: tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app", Server: "pg-move"}}}},
	}
	if err := src.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range []client.Client{src, dst} {
			_ = c.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}}, client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"tenancy.landlord.dev/confirm-deletion":"mover"}}}`)))
			_ = c.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}})
		}
	})
	ns := cfg.NamespaceName("mover")
	waitFor(t, time.Minute, "the tenant's database and shared secret", func() error {
		s := &corev1.Secret{}
		if err := src.Get(ctx, client.ObjectKey{Namespace: ns, Name: "move-shared"}, s); err != nil {
			return err
		}
		return src.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.DatabaseSecretName("app")}, s)
	})
	original := getTenant(t, src, "mover")
	creds := &corev1.Secret{}
	if err := src.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.DatabaseSecretName("app")}, creds); err != nil {
		t.Fatal(err)
	}
	user, password, dbname := string(creds.Data[tenancyv1alpha1.CredentialsKeyUsername]), string(creds.Data[tenancyv1alpha1.CredentialsKeyPassword]), string(creds.Data[tenancyv1alpha1.CredentialsKeyDatabase])
	db, err := dbtest.OpenDB(pg.Server, user, password, dbname)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id int); INSERT INTO orders VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	// ordersStillThere logs in with the tenant's original credentials and reads the row.
	ordersStillThere := func(t *testing.T, what string) {
		t.Helper()
		db, err := dbtest.OpenDB(pg.Server, user, password, dbname)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var id int
		if err := db.QueryRowContext(ctx, `SELECT id FROM orders`).Scan(&id); err != nil || id != 42 {
			t.Errorf("%s: %d, %v", what, id, err)
		}
	}

	refused := func(t *testing.T, want string) {
		t.Helper()
		_, err := move(ctx)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if got := getTenant(t, src, "mover"); got.Spec.State != original.Spec.State || got.Generation != original.Generation {
			t.Errorf("the refused move changed the source tenant: state %q, generation %d", got.Spec.State, got.Generation)
		}
		if err := dst.Get(ctx, client.ObjectKey{Name: "mover"}, &tenancyv1alpha1.Tenant{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused move created the tenant at the destination: %v", err)
		}
	}

	t.Run("a destination without the tenant's DatabaseServer is refused before anything changes", func(t *testing.T) {
		refused(t, "its database app is on DatabaseServer pg-move, which context eu-2 does not have")
	})
	register(dstEnv)

	t.Run("a destination synced from another secret store is refused before anything changes", func(t *testing.T) {
		templates := &corev1.Namespace{}
		if err := dst.Get(ctx, client.ObjectKey{Name: cfg.Secrets.TemplateNamespace}, templates); err != nil {
			t.Fatal(err)
		}
		identity := templates.Annotations[tenancyv1alpha1.SecretStoreAnnotation]
		if identity == "" {
			t.Fatal("the destination's template namespace records no store")
		}
		annotate := func(value string) {
			patch := []byte(`{"metadata":{"annotations":{"` + tenancyv1alpha1.SecretStoreAnnotation + `":"` + value + `"}}}`)
			if err := dst.Patch(ctx, templates, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
		annotate("another-store")
		defer annotate(identity)
		refused(t, `from "another-store"`)
	})

	t.Run("a destination whose operator names tenant namespaces with another prefix is refused before the source is touched", func(t *testing.T) {
		// The destination's operator is configured by its ConfigMap (config/manager, the chart):
		// it would look for the tenant's stored credentials under org-mover, not tenant-mover.
		system := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}
		if err := dst.Create(ctx, system); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		operatorConfig := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorConfigMap},
			Data:       map[string]string{operatorConfigKey: "namespacePrefix: org-\n"},
		}
		if err := dst.Create(ctx, operatorConfig); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := dst.Delete(ctx, operatorConfig); err != nil {
				t.Fatal(err)
			}
		}()
		refused(t, `context eu-2's operator makes tenant namespaces with namespacePrefix "org-", not "tenant-"`)
		if got := getTenant(t, src, "mover"); got.Annotations[tenancyv1alpha1.MovedToAnnotation] != "" {
			t.Errorf("the refused move marked the source as moved: %v", got.Annotations)
		}
	})

	t.Run("a source whose state a GitOps controller applies is refused before anything changes", func(t *testing.T) {
		apply := func(body string) {
			t.Helper()
			patch := []byte(`{"apiVersion":"tenancy.landlord.dev/v1alpha1","kind":"Tenant","metadata":{"name":"mover"}` + body + `}`)
			if err := src.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}}, client.RawPatch(types.ApplyPatchType, patch), client.FieldOwner("kustomize-controller")); err != nil {
				t.Fatal(err)
			}
		}
		apply(`,"spec":{"state":"Active","organization":"Mover Inc.","email":"ops@mover.example.com"}`)
		refused(t, "its spec.state is managed by kustomize-controller, which would make it Active again at the source: move it in Git")
		// Flux lets go of the tenant (its file removed from this cluster's directory, without pruning).
		apply(``)
		original = getTenant(t, src, "mover")
	})

	t.Run("a move stopped once the source is archived changes nothing at the destination", func(t *testing.T) {
		stopped, stop := context.WithCancel(ctx)
		moveStep = func(step string) {
			if step == string(tenancyv1alpha1.StateArchived) {
				stop()
			}
		}
		defer func() { moveStep = nil; stop() }()
		if _, err := move(stopped); err == nil {
			t.Fatal("the stopped move succeeded")
		}
		if got := getTenant(t, src, "mover"); got.Spec.State != tenancyv1alpha1.StateArchived {
			t.Errorf("source state %q, want Archived", got.Spec.State)
		}
		if err := dst.Get(ctx, client.ObjectKey{Name: "mover"}, &tenancyv1alpha1.Tenant{}); !apierrors.IsNotFound(err) {
			t.Errorf("destination tenant: %v, want none yet", err)
		}
	})

	t.Run("running it again finishes it, with the database's password and data", func(t *testing.T) {
		out, err := move(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "setting it") {
			t.Error("the rerun changed the source's state again")
		}
		for _, want := range []string{"created in context eu-2, adopting the data of UID " + string(original.UID), "done: Ready in context eu-2 (namespace " + ns + ")"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		moved := getTenant(t, dst, "mover")
		if moved.Annotations[tenancyv1alpha1.AdoptDataAnnotation] != string(original.UID) || moved.Spec.State != tenancyv1alpha1.StateActive || moved.Labels["plan"] != "gold" {
			t.Errorf("destination tenant: annotations %v, state %q, labels %v", moved.Annotations, moved.Spec.State, moved.Labels)
		}
		if _, ok := moved.Annotations[tenancyv1alpha1.MovedToAnnotation]; ok {
			t.Error("the destination tenant carries the source's moved-to mark")
		}
		if len(moved.Status.Databases) != 1 || moved.Status.Databases[0].Database != dbname || moved.Status.Databases[0].Username != user {
			t.Errorf("the destination tenant's databases: %+v", moved.Status.Databases)
		}
		after := &corev1.Secret{}
		if err := dst.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.DatabaseSecretName("app")}, after); err != nil {
			t.Fatal(err)
		}
		if string(after.Data[tenancyv1alpha1.CredentialsKeyPassword]) != password || string(after.Data[tenancyv1alpha1.CredentialsKeyUsername]) != user {
			t.Error("the moved tenant's database credentials are not the ones it had")
		}
		ordersStillThere(t, "the moved database")
		waitFor(t, time.Minute, "the shared secret at the destination", func() error {
			return dst.Get(ctx, client.ObjectKey{Namespace: ns, Name: "move-shared"}, &corev1.Secret{})
		})
		if got := getTenant(t, src, "mover"); got.Spec.State != tenancyv1alpha1.StateArchived {
			t.Errorf("source state %q, want Archived", got.Spec.State)
		}
	})

	t.Run("the tenant left at the source is not made Active again", func(t *testing.T) {
		patch := []byte(`{"spec":{"state":"Active"}}`)
		err := src.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}}, client.RawPatch(types.MergePatchType, patch))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "was moved to "+dstEnv.Admin.Host+", which uses its data now") {
			t.Fatalf("err = %v, want the admission policy's refusal", err)
		}
	})

	t.Run("moving it back onto the tenant it became, or moving it again elsewhere, is refused", func(t *testing.T) {
		_, err := landlordctlIn(ctx, "--kubeconfig", kubeconfig, "move", "mover", "--from", "eu-2", "--to", "eu-1")
		if err == nil || !strings.Contains(err.Error(), "context eu-1 already has a tenant mover of its own") {
			t.Errorf("moving back: %v", err)
		}
		mark := func(value string) {
			patch := []byte(`{"metadata":{"annotations":{"` + tenancyv1alpha1.MovedToAnnotation + `":"` + value + `"}}}`)
			if err := src.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
		mark("https://elsewhere.example.com")
		defer mark(dstEnv.Admin.Host)
		_, err = move(ctx)
		if err == nil || !strings.Contains(err.Error(), "was moved to https://elsewhere.example.com already") {
			t.Errorf("moving again: %v", err)
		}
		// Unmarked, the source looks never moved: the destination's tenant, annotated to adopt
		// its data, is then not one this command made, and is not trusted.
		unmark := []byte(`{"metadata":{"annotations":{"` + tenancyv1alpha1.MovedToAnnotation + `":null}}}`)
		if err := src.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}}, client.RawPatch(types.MergePatchType, unmark)); err != nil {
			t.Fatal(err)
		}
		_, err = move(ctx)
		if err == nil || !strings.Contains(err.Error(), "which no move of this command created") {
			t.Errorf("moving onto a tenant made another way: %v", err)
		}
	})

	t.Run("a move that is done is done: running it again changes nothing", func(t *testing.T) {
		before := getTenant(t, dst, "mover")
		out, err := move(ctx)
		if err != nil || strings.Contains(out, "created") || strings.Contains(out, "setting it") {
			t.Fatalf("err = %v", err)
		}
		if after := getTenant(t, dst, "mover"); after.Generation != before.Generation {
			t.Errorf("the destination tenant changed: generation %d → %d", before.Generation, after.Generation)
		}
		if got := getTenant(t, src, "mover"); got.Spec.State != tenancyv1alpha1.StateArchived {
			t.Errorf("source state %q, want Archived", got.Spec.State)
		}
	})
	t.Run("purging the tenant left at the source drops nothing of the moved one", func(t *testing.T) {
		patch := []byte(`{"spec":{"state":"Purged","purgeConfirmation":"mover"}}`)
		if err := src.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "mover"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		// The purge has run when the source reports on its Purged generation, done or stalled.
		waitFor(t, time.Minute, "the source's purge", func() error {
			got := getTenant(t, src, "mover")
			res, err := kstatusOf(got, "Tenant")
			if err != nil {
				return err
			}
			if got.Status.ObservedGeneration != got.Generation || res.Status != "Current" {
				return fmt.Errorf("source tenant: %s: %s", res.Status, res.Message)
			}
			t.Logf("the source after its purge: %s: %s", res.Status, res.Message)
			return nil
		})
		ordersStillThere(t, "the moved database after the source's purge")
		if err := dst.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.DatabaseSecretName("app")}, &corev1.Secret{}); err != nil {
			t.Errorf("the moved tenant's credentials: %v", err)
		}
		record, err := store.Get(ctx, ns, tenancyv1alpha1.DatabaseSecretName("app"))
		if err != nil || record == nil {
			t.Fatalf("the stored credentials after the source's purge: %v, %v", record, err)
		}
		if uid := record.Annotations[tenancyv1alpha1.TenantUIDLabel]; uid != string(getTenant(t, dst, "mover").UID) {
			t.Errorf("the stored credentials name tenant UID %q, not the moved tenant's", uid)
		}
	})
}
