// Package secret keeps secrets outside the cluster, encrypted, and brings them in: a Store
// (Google Cloud Storage with Cloud KMS, or a local directory with a local key) holds shared and
// per-tenant secrets. The shared ones are mirrored into the template namespace (package
// templatesync), from where the tenant controller copies them into every tenant.
package secret

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrNotFound is returned by Get and Delete for a secret the store does not hold.
var ErrNotFound = errors.New("secret not found in store")

// ErrPreconditionFailed is DeleteIf's answer when the secret the store holds is not the one the
// caller may delete: it fails the caller's test, or was rewritten while the delete was made.
var ErrPreconditionFailed = errors.New("secret in store does not meet the delete's precondition")

// Store holds secrets at rest, encrypted, by namespace and name. Only a secret's name,
// namespace, labels, annotations, type and data are kept.
type Store interface {
	Get(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	List(ctx context.Context, namespace string) ([]*corev1.Secret, error)
	Put(ctx context.Context, s *corev1.Secret) error
	Delete(ctx context.Context, namespace, name string) error
	// DeleteIf removes a secret only while the copy the store holds passes match: the copy is
	// read, tested, and deleted only if nothing rewrote it since it was read (a generation
	// precondition on Cloud Storage, an unchanged file under the store's lock on a directory).
	// A record another writer put in between is therefore never deleted on the strength of the
	// one it replaced. It returns ErrNotFound for a secret the store does not hold, and
	// ErrPreconditionFailed when the held copy fails match.
	DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error
	// Identity is the store's own random identifier, written on its first use. What was mirrored
	// from one store records it, so that another store (an empty directory after a pod moved, a
	// wrong bucket prefix, a command run with the wrong configuration) is told apart before it
	// is trusted to say what no longer exists.
	Identity(ctx context.Context) (string, error)
}

// conditionalDeleteAttempts bounds how often DeleteIf tests a copy rewritten under it again: a
// record rewritten that often is being written to, and the caller retries later.
const conditionalDeleteAttempts = 3

// identityName is where a store keeps its identity: a name no namespace can take (namespaces
// are DNS labels, which cannot start with a dot).
const identityName = ".landlord-store-id"

// newIdentity is a fresh store identity.
func newIdentity() string { return string(uuid.NewUUID()) }

// validateKey keeps namespaces and names to what Kubernetes allows, which also keeps them safe
// as file and object path segments.
func validateKey(namespace, name string) error {
	if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
		return fmt.Errorf("invalid secret namespace %q: %v", namespace, msgs)
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("invalid secret name %q: %v", name, msgs)
	}
	return nil
}
