package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// helmReleaseType is the type of Helm's release records: state of a release, never shareable.
const helmReleaseType corev1.SecretType = "helm.sh/release.v1"

// SharedFor reports whether a template secret is shared with the tenant: it is labeled
// shared, is not a service-account token or Helm release, and its tenant selector (if any)
// matches the tenant's labels. An invalid selector shares with no one and is returned as an error.
func SharedFor(src *corev1.Secret, t *tenancyv1alpha1.Tenant) (bool, error) {
	if src.Labels[tenancyv1alpha1.SharedLabel] != "true" ||
		src.Type == corev1.SecretTypeServiceAccountToken || src.Type == helmReleaseType {
		return false, nil
	}
	expr, ok := src.Annotations[tenancyv1alpha1.TenantSelectorAnnotation]
	if !ok {
		return true, nil
	}
	sel, err := labels.Parse(expr)
	if err != nil {
		return false, fmt.Errorf("secret %s/%s: annotation %s: %w", src.Namespace, src.Name, tenancyv1alpha1.TenantSelectorAnnotation, err)
	}
	return sel.Matches(labels.Set(t.Labels)), nil
}

// SourceError is a template secret that cannot be shared as it stands.
type SourceError struct {
	Source *corev1.Secret
	Err    error
}

// SharedSecrets are the tenant's copies of the template secrets shared with it, by name. The
// copies carry only the source's type and data (not its labels or annotations, which describe
// the template), plus where they came from. Templates with an invalid selector are shared with
// no one and returned as errors.
func SharedSecrets(t *tenancyv1alpha1.Tenant, namespace string, templates []corev1.Secret) ([]*corev1.Secret, []SourceError) {
	var (
		out  []*corev1.Secret
		errs []SourceError
	)
	for i := range templates {
		src := &templates[i]
		shared, err := SharedFor(src, t)
		if err != nil {
			errs = append(errs, SourceError{Source: src, Err: err})
		}
		if !shared {
			continue
		}
		if db, ok := credentialsNamed(t, src.Name); ok {
			// One field manager writes both: each apply would take the other's keys away.
			errs = append(errs, SourceError{Source: src, Err: fmt.Errorf(
				"secret %s/%s is not copied into %s: tenant %s keeps the credentials of its database %s under that name; give the shared secret another name",
				src.Namespace, src.Name, namespace, t.Name, db)})
			continue
		}
		meta := objectMeta(t, namespace, src.Name)
		meta.Labels[tenancyv1alpha1.SharedCopyLabel] = "true"
		meta.Annotations = map[string]string{
			tenancyv1alpha1.SourceAnnotation:     src.Namespace + "/" + src.Name,
			tenancyv1alpha1.SourceHashAnnotation: SecretHash(src),
		}
		out = append(out, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta,
			Type:       src.Type,
			Data:       src.Data,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs
}

// SecretHash is a digest of a secret's type and data. It travels on copies, which hold the data
// anyway, so it reveals nothing to anyone who cannot already read them.
func SecretHash(s *corev1.Secret) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", s.Type)
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(s.Data[k]))
		h.Write(s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// TemplateSecret is a secret of the store as it sits in the template namespace: labeled as
// managed by Landlord and as coming from the store, so that it is removed when it leaves it.
func TemplateSecret(namespace string, stored *corev1.Secret) *corev1.Secret {
	labels := maps.Clone(stored.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[tenancyv1alpha1.ManagedByLabel] = tenancyv1alpha1.ManagedByValue
	labels[tenancyv1alpha1.FromStoreLabel] = "true"
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: stored.Name, Labels: labels, Annotations: stored.Annotations},
		Type:       stored.Type,
		Data:       stored.Data,
	}
}

// credentialsNamed is the database of t's spec whose credentials Secret is called name, if any.
func credentialsNamed(t *tenancyv1alpha1.Tenant, name string) (string, bool) {
	db, ok := tenancyv1alpha1.DatabaseOfSecret(name)
	if !ok {
		return "", false
	}
	for _, d := range slices.Concat(t.Spec.Databases.Postgres, t.Spec.Databases.MySQL) {
		if d.Name == db {
			return db, true
		}
	}
	return "", false
}
