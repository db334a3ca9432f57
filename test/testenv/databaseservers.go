package testenv

import (
	"context"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// Names of the DatabaseServers StartDatabaseServers registers.
const (
	PostgresServer = "pg-main"
	MySQLServer    = "mariadb-main"
)

// StartDatabaseServers starts a PostgreSQL and a MariaDB server (dbtest.StartEach) and registers
// them as the DatabaseServers PostgresServer and MySQLServer, their admin credentials in
// credentialsNamespace, which it creates. stop stops both servers.
func (e *Env) StartDatabaseServers(ctx context.Context, credentialsNamespace string) (servers map[database.Engine]*dbtest.Instance, stop func(), err error) {
	servers, stop, err = dbtest.StartEach()
	if err != nil {
		return nil, nil, err
	}
	if err := e.AdminClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: credentialsNamespace}}); err != nil {
		stop()
		return nil, nil, err
	}
	for name, inst := range map[string]*dbtest.Instance{PostgresServer: servers[database.Postgres], MySQLServer: servers[database.MySQL]} {
		if err := e.RegisterDatabaseServer(ctx, credentialsNamespace, name, inst); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return servers, stop, nil
}

// RegisterDatabaseServer registers a test server as the DatabaseServer name, with its admin
// credentials in a Secret of credentialsNamespace, as an administrator does. mutate, when
// given, changes the spec first.
func (e *Env) RegisterDatabaseServer(ctx context.Context, credentialsNamespace, name string, inst *dbtest.Instance, mutate ...func(*tenancyv1alpha1.DatabaseServerSpec)) error {
	creds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: credentialsNamespace, Name: name + "-admin"},
		StringData: map[string]string{"username": inst.Server.AdminUser, "password": inst.Server.AdminPassword},
	}
	if err := e.AdminClient.Create(ctx, creds); err != nil {
		return err
	}
	spec := tenancyv1alpha1.DatabaseServerSpec{
		Engine:           tenancyv1alpha1.DatabaseEngine(inst.Server.Engine),
		Host:             inst.Server.Host,
		Port:             inst.Server.Port,
		TLS:              tenancyv1alpha1.DatabaseTLSMode(inst.Server.TLS),
		AdminCredentials: tenancyv1alpha1.SecretReference{Name: creds.Name},
	}
	for _, m := range mutate {
		m(&spec)
	}
	return e.AdminClient.Create(ctx, &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
}

// KStatus computes an object's status the way kstatus-aware tools (Flux, kubectl wait) do.
func KStatus(obj any) (*status.Result, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return status.Compute(&unstructured.Unstructured{Object: content})
}

// AccountOf is the database login a tenant's credentials Secret hands its applications.
func AccountOf(s *corev1.Secret) database.Account {
	return database.Account{
		Database: string(s.Data[tenancyv1alpha1.CredentialsKeyDatabase]),
		Username: string(s.Data[tenancyv1alpha1.CredentialsKeyUsername]),
		Password: string(s.Data[tenancyv1alpha1.CredentialsKeyPassword]),
	}
}
