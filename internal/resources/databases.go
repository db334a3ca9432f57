package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
)

// DatabaseCredentials are one tenant database's login and where it lives.
type DatabaseCredentials struct {
	Engine tenancyv1alpha1.DatabaseEngine
	// Name is the database's name in the tenant spec.
	Name string
	// Server is the DatabaseServer holding it.
	Server string
	// Rotation is the rotation request the password answers.
	Rotation string
	// UID is the UID of the tenant a stored record belongs to; empty on a record written before
	// records carried one, and on the tenant's own Secret.
	UID     string
	Account database.Account
}

// CredentialsDigest is a short digest of a login and password. It travels on the credentials
// Secret, which holds the password anyway, so it tells only whether the Secret was edited.
func CredentialsDigest(acct database.Account) string {
	sum := sha256.Sum256([]byte(acct.Database + "\x00" + acct.Username + "\x00" + acct.Password))
	return hex.EncodeToString(sum[:12])
}

// StoredCredentials is the record of a tenant database kept in the secret store, marked with the
// UID of the tenant it belongs to (c.UID). It is written
// before the database is created, so the store always knows every database a tenant may have,
// where it is, and its password: a Purged tenant's databases are found from it, and an Archived
// tenant brought back gets the same password.
func StoredCredentials(namespace string, c DatabaseCredentials) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      tenancyv1alpha1.DatabaseSecretName(c.Name),
			Labels:    map[string]string{tenancyv1alpha1.DatabaseEngineLabel: string(c.Engine)},
			Annotations: map[string]string{
				tenancyv1alpha1.DatabaseServerAnnotation: c.Server,
				tenancyv1alpha1.RotationAnnotation:       c.Rotation,
				tenancyv1alpha1.TenantUIDLabel:           c.UID,
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			tenancyv1alpha1.CredentialsKeyDatabase: []byte(c.Account.Database),
			tenancyv1alpha1.CredentialsKeyUsername: []byte(c.Account.Username),
			tenancyv1alpha1.CredentialsKeyPassword: []byte(c.Account.Password),
		},
	}
}

// ParseStoredCredentials reads a stored record back; ok is false for a stored secret that is not
// a database record.
func ParseStoredCredentials(s *corev1.Secret, name string) (c DatabaseCredentials, ok bool, err error) {
	engine := s.Labels[tenancyv1alpha1.DatabaseEngineLabel]
	if engine == "" {
		return c, false, nil
	}
	c = credentialsOf(s, name)
	if c.Server == "" || c.Account.Database == "" || c.Account.Username == "" || c.Account.Password == "" {
		return c, true, fmt.Errorf("stored credentials %s/%s are incomplete", s.Namespace, s.Name)
	}
	return c, true, nil
}

// DatabaseSecret is the credentials Secret in the tenant namespace: what the tenant's
// application needs to connect, as separate keys and as one URL.
func DatabaseSecret(t *tenancyv1alpha1.Tenant, namespace string, c DatabaseCredentials, srv database.Server) *corev1.Secret {
	meta := objectMeta(t, namespace, tenancyv1alpha1.DatabaseSecretName(c.Name))
	meta.Labels[tenancyv1alpha1.DatabaseEngineLabel] = string(c.Engine)
	meta.Annotations = map[string]string{
		tenancyv1alpha1.DatabaseServerAnnotation:    c.Server,
		tenancyv1alpha1.RotationAnnotation:          c.Rotation,
		tenancyv1alpha1.CredentialsDigestAnnotation: CredentialsDigest(c.Account),
	}
	data := map[string][]byte{
		tenancyv1alpha1.CredentialsKeyHost:     []byte(srv.Host),
		tenancyv1alpha1.CredentialsKeyPort:     []byte(strconv.Itoa(int(srv.Port))),
		tenancyv1alpha1.CredentialsKeyTLS:      []byte(srv.TLS),
		tenancyv1alpha1.CredentialsKeyDatabase: []byte(c.Account.Database),
		tenancyv1alpha1.CredentialsKeyUsername: []byte(c.Account.Username),
		tenancyv1alpha1.CredentialsKeyPassword: []byte(c.Account.Password),
		tenancyv1alpha1.CredentialsKeyURL:      []byte(database.URL(srv, c.Account)),
	}
	if len(srv.CABundle) > 0 {
		data[tenancyv1alpha1.CredentialsKeyCA] = srv.CABundle
	}
	if c.Engine == tenancyv1alpha1.EnginePostgres && t.Spec.PgBouncer != nil && t.Spec.PgBouncer.DefaultPoolSize > 0 {
		data[tenancyv1alpha1.CredentialsKeyPgBouncerPoolSize] = []byte(strconv.Itoa(int(t.Spec.PgBouncer.DefaultPoolSize)))
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// CredentialsFromSecret reads the credentials back from a tenant's credentials Secret. ok is
// false unless the Secret is intact (its digest matches), so a Secret edited by hand is never
// trusted as the source of a password.
func CredentialsFromSecret(s *corev1.Secret, name string) (c DatabaseCredentials, ok bool) {
	c = credentialsOf(s, name)
	ok = c.Server != "" && c.Account.Password != "" &&
		s.Annotations[tenancyv1alpha1.CredentialsDigestAnnotation] == CredentialsDigest(c.Account)
	return c, ok
}

// credentialsOf reads the fields a stored record and a tenant's Secret have in common.
func credentialsOf(s *corev1.Secret, name string) DatabaseCredentials {
	return DatabaseCredentials{
		Engine:   tenancyv1alpha1.DatabaseEngine(s.Labels[tenancyv1alpha1.DatabaseEngineLabel]),
		Name:     name,
		Server:   s.Annotations[tenancyv1alpha1.DatabaseServerAnnotation],
		Rotation: s.Annotations[tenancyv1alpha1.RotationAnnotation],
		UID:      s.Annotations[tenancyv1alpha1.TenantUIDLabel],
		Account: database.Account{
			Database: string(s.Data[tenancyv1alpha1.CredentialsKeyDatabase]),
			Username: string(s.Data[tenancyv1alpha1.CredentialsKeyUsername]),
			Password: string(s.Data[tenancyv1alpha1.CredentialsKeyPassword]),
		},
	}
}
