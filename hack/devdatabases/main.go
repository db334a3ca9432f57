// Command devdatabases starts throwaway PostgreSQL and MariaDB servers on 127.0.0.1 and
// registers them, in the cluster of the current kubeconfig (the embedded one of `make run` when
// there is none), as the DatabaseServers local-postgres and local-mysql. It runs until
// interrupted; the servers and their data go with it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	landlordconfig "github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devdatabases:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	embedded := filepath.Join("bin", "embedded", "kubeconfig")
	if os.Getenv("KUBECONFIG") == "" {
		if _, err := os.Stat(embedded); err == nil {
			os.Setenv("KUBECONFIG", embedded)
		}
	}
	restCfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster (start `make run` first): %w", err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return err
	}

	pg, err := dbtest.StartPostgres()
	if err != nil {
		return err
	}
	defer pg.Close()
	maria, err := dbtest.StartMariaDB()
	if err != nil {
		return err
	}
	defer maria.Close()

	ns := landlordconfig.Default().Databases.CredentialsNamespace
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for name, inst := range map[string]*dbtest.Instance{"local-postgres": pg, "local-mysql": maria} {
		creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-admin"}}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, creds, func() error {
			creds.Data = map[string][]byte{"username": []byte(inst.Server.AdminUser), "password": []byte(inst.Server.AdminPassword)}
			return nil
		}); err != nil {
			return err
		}
		ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, ds, func() error {
			ds.Spec.Engine = tenancyv1alpha1.DatabaseEngine(inst.Server.Engine)
			ds.Spec.Host = inst.Server.Host
			ds.Spec.Port = inst.Server.Port
			ds.Spec.TLS = tenancyv1alpha1.DatabaseTLSMode(inst.Server.TLS)
			ds.Spec.AdminCredentials.Name = creds.Name
			return nil
		}); err != nil {
			return err
		}
		fmt.Printf("DatabaseServer %s: %s on %s:%d\n", name, inst.Server.Engine, inst.Server.Host, inst.Server.Port)
	}
	fmt.Println("ready; try: kubectl apply -f config/samples/databases/tenant.yaml  (Ctrl-C stops the servers)")
	<-ctx.Done()
	return nil
}
