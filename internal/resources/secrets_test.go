package resources_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
)

func template(name string, typ corev1.SecretType, labels, annotations map[string]string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "landlord-templates", Name: name, Labels: labels, Annotations: annotations},
		Type:       typ,
		Data:       map[string][]byte{"token": []byte(name)},
	}
}

func TestSharedSecrets(t *testing.T) {
	shared := map[string]string{tenancyv1alpha1.SharedLabel: "true"}
	templates := []corev1.Secret{
		template("z-all", corev1.SecretTypeOpaque, shared, nil),
		template("a-all", corev1.SecretTypeOpaque, shared, nil),
		template("enterprise", corev1.SecretTypeOpaque, shared, map[string]string{tenancyv1alpha1.TenantSelectorAnnotation: "plan=enterprise"}),
		template("not-shared", corev1.SecretTypeOpaque, nil, nil),
		template("token", corev1.SecretTypeServiceAccountToken, shared, nil),
		template("helm", "helm.sh/release.v1", shared, nil),
		template("bad-selector", corev1.SecretTypeOpaque, shared, map[string]string{tenancyv1alpha1.TenantSelectorAnnotation: "plan in ("}),
	}
	cases := map[string]struct {
		labels  map[string]string
		want    []string
		invalid int
	}{
		"a tenant without labels gets the secrets shared with all": {nil, []string{"a-all", "z-all"}, 1},
		"an enterprise tenant also gets the enterprise secret":     {map[string]string{"plan": "enterprise"}, []string{"a-all", "enterprise", "z-all"}, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tn := tenant(func(t *tenancyv1alpha1.Tenant) { t.Labels = tc.labels })
			copies, invalid := resources.SharedSecrets(tn, "tenant-acme", templates)
			var got []string
			for _, c := range copies {
				got = append(got, c.Name)
				if c.Namespace != "tenant-acme" || c.Labels[tenancyv1alpha1.SharedCopyLabel] != "true" || !metav1.IsControlledBy(c, tn) {
					t.Errorf("copy %s is not a managed copy in the tenant namespace: %+v", c.Name, c.ObjectMeta)
				}
				if c.Annotations[tenancyv1alpha1.SourceAnnotation] != "landlord-templates/"+c.Name {
					t.Errorf("copy %s source = %q", c.Name, c.Annotations[tenancyv1alpha1.SourceAnnotation])
				}
				if _, ok := c.Labels[tenancyv1alpha1.SharedLabel]; ok {
					t.Errorf("copy %s carries the template's shared label", c.Name)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("copies = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("copies = %v, want %v", got, tc.want)
				}
			}
			if len(invalid) != tc.invalid || (len(invalid) > 0 && invalid[0].Source.Name != "bad-selector") {
				t.Errorf("invalid = %+v", invalid)
			}
		})
	}
}

func TestSecretHashFollowsTypeAndData(t *testing.T) {
	base := template("s", corev1.SecretTypeOpaque, nil, nil)
	same := base.DeepCopy()
	same.Labels = map[string]string{"other": "metadata"}
	changed := base.DeepCopy()
	changed.Data["token"] = []byte("other")
	retyped := base.DeepCopy()
	retyped.Type = corev1.SecretTypeTLS
	// Moving bytes between keys must change the hash too.
	shifted := &corev1.Secret{Data: map[string][]byte{"tok": []byte("ens")}}
	unshifted := &corev1.Secret{Data: map[string][]byte{"toke": []byte("ns")}}

	if resources.SecretHash(&base) != resources.SecretHash(same) {
		t.Error("metadata changed the hash")
	}
	for name, other := range map[string]*corev1.Secret{"data": changed, "type": retyped} {
		if resources.SecretHash(&base) == resources.SecretHash(other) {
			t.Errorf("a change of %s kept the hash", name)
		}
	}
	if resources.SecretHash(shifted) == resources.SecretHash(unshifted) {
		t.Error("key/value boundaries are not part of the hash")
	}
}

// A shared secret named as a tenant's database credentials (db-<database>) would be written
// over them by one apply and back by the next, without end, with one field manager: the
// credentials' keys gone between. It is not copied into that tenant, and the template says why;
// every other tenant still gets it.
func TestASharedSecretNamedForADatabasesCredentialsIsNotCopiedOverThem(t *testing.T) {
	shared := map[string]string{tenancyv1alpha1.SharedLabel: "true"}
	templates := []corev1.Secret{
		template(tenancyv1alpha1.DatabaseSecretName("app"), corev1.SecretTypeOpaque, shared, nil),
		template("api-key", corev1.SecretTypeOpaque, shared, nil),
	}
	for name, tc := range map[string]struct {
		databases tenancyv1alpha1.Databases
		want      []string
		refused   bool
	}{
		"a tenant with a PostgreSQL database of that name does not get it": {
			tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app"}}}, []string{"api-key"}, true},
		"a tenant with a MySQL database of that name does not get it": {
			tenancyv1alpha1.Databases{MySQL: []tenancyv1alpha1.Database{{Name: "app"}}}, []string{"api-key"}, true},
		"a tenant without one gets it": {
			tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "other"}}}, []string{"api-key", "db-app"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			tn := tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Databases = tc.databases })
			copies, invalid := resources.SharedSecrets(tn, "tenant-acme", templates)
			var got []string
			for _, c := range copies {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("copies = %v, want %v", got, tc.want)
			}
			if refused := len(invalid) == 1 && invalid[0].Source.Name == "db-app" && strings.Contains(invalid[0].Err.Error(), "database app"); refused != tc.refused || (!tc.refused && len(invalid) > 0) {
				t.Errorf("invalid = %+v, want db-app refused naming the database: %v", invalid, tc.refused)
			}
		})
	}
}
