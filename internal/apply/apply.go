// Package apply writes desired objects only when they differ from what the informer cache
// holds, so converging an unchanged tenant costs no API request. Writes are server-side apply
// with one field manager, so fields Landlord stops setting are removed and fields others set
// are left alone.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply field manager of everything Landlord writes.
const FieldOwner = "landlord"

// HashAnnotation holds a digest of the desired object as last applied. The cache comparison
// sees fields that drifted on the live object; the digest sees fields Landlord stopped setting,
// which a comparison of desired against live cannot.
const HashAnnotation = "tenancy.landlord.dev/applied-hash"

// Result says what Apply did.
type Result int

const (
	// Unchanged: the live object already matched; no request was made.
	Unchanged Result = iota
	// Created: the object did not exist.
	Created
	// Updated: the object existed and differed from a changed desired state.
	Updated
	// Repaired: the object existed and had been changed by someone else since Landlord last
	// applied it (see WholeObject for what counts); it is as Landlord builds it again.
	Repaired
)

func (r Result) String() string {
	return [...]string{"unchanged", "created", "updated", "repaired"}[r]
}

// ConflictError reports an object that exists but is not controlled by the owner Landlord
// would apply it for. It is never taken over: that would hand another team's object to a tenant.
type ConflictError struct {
	Kind, Name string
	Owner      string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %q already exists and is not managed by %s", e.Kind, e.Name, e.Owner)
}

// Applier applies desired objects.
type Applier struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server. It is used only when a cluster-scoped object is
	// missing from the cache, to check that the name is not taken before writing it.
	APIReader client.Reader
	// ReservedNames says the names of the desired cluster-scoped objects are Landlord's own,
	// with no owner object to check: one missing from the cache (it lost the label the cache
	// selects on) is taken back without reading it, never reported as someone else's.
	ReservedNames bool
	// Memo, when set, spares the comparison of objects already found to match at their
	// current resourceVersion.
	Memo *Memo
	// Inputs, when set, digests everything the desired objects are built from, and stands for
	// their own fingerprints, which are then not computed. Only a caller whose builders are pure
	// functions of those inputs may set it.
	Inputs *Fingerprint
	// WholeObject makes the live object's body (everything but metadata and status) exactly the
	// server-defaulted desired one: a field someone else added beside Landlord's is removed, not
	// only a field of Landlord's that someone changed. It is for the objects that are the
	// isolation boundary, which only Landlord may shape. The cache must carry
	// ForeignFieldsAnnotation (MarkForeignFields).
	WholeObject bool
	// Verify compares every object with the API server's own copy: one the cache keeps without
	// its body is read, rather than taken for Landlord's on the strength of the memo, its
	// applied-hash annotation and the absence of other field managers. It is for a person's
	// request to check a tenant now, when what the cache and the memo say is in doubt.
	Verify bool
	// Repaired, when set, hears of every repair: the object, and the field managers that had
	// added to it (none when only fields of Landlord's had changed).
	Repaired func(obj client.Object, foreign []string)
	// OwnedByOthers are fields of the objects this applier writes that other controllers take
	// over once an object exists (see OthersField). Not for a WholeObject applier: the objects
	// that are the isolation boundary are Landlord's alone.
	OwnedByOthers []OthersField
	// NoForce applies without forcing, whether or not the cache holds the object: a field
	// another manager holds with another value (one that took the object over since the cache
	// last heard, or one that wrote the same value beside Landlord and so co-owns it) makes the
	// API server refuse the apply with a conflict (apierrors.IsConflict) rather than hand
	// Landlord the field. It is for names Landlord shares with other writers, where it writes
	// only what it can tell is its own alone.
	NoForce bool
}

// Apply makes the live object carry every field of desired. desired must have its TypeMeta set
// and, for a cluster-scoped object, a controller owner reference (see ReservedNames for the
// exception): a cluster-scoped name is
// shared with the whole cluster, so Apply only writes one that is absent or already controlled
// by that owner. Namespaced objects live in the tenant's own namespace and are applied as is.
func (a *Applier) Apply(ctx context.Context, desired client.Object) (Result, error) {
	result, _, err := a.ApplyLive(ctx, desired)
	return result, err
}

// ApplyLive is Apply, and also returns the object as the API server answered the write (nil
// when nothing was written): fresher than the cache, which sees the write only later.
func (a *Applier) ApplyLive(ctx context.Context, desired client.Object) (Result, *unstructured.Unstructured, error) {
	if desired.GetObjectKind().GroupVersionKind().Kind == "" {
		return Unchanged, nil, fmt.Errorf("%T %s has no kind set", desired, desired.GetName())
	}
	live, err := a.newLike(desired)
	if err != nil {
		return Unchanged, nil, err
	}
	var fingerprint Fingerprint
	switch {
	case a.Memo == nil:
	case a.Inputs != nil:
		fingerprint = *a.Inputs
	default:
		if fingerprint, err = fingerprintOf(desired); err != nil {
			return Unchanged, nil, err
		}
	}
	key := client.ObjectKeyFromObject(desired)
	result := Updated
	var want map[string]any
	// live is read without the deep copy the cache otherwise makes, a third of the CPU of a
	// no-op reconcile: it shares the cache's maps and slices, and is only ever read.
	var foreign []string
	// server is the API server's copy of the object when it was read, managed fields and all.
	var server client.Object
	force := !a.NoForce
	switch err := a.Client.Get(ctx, key, live, client.UnsafeDisableDeepCopy); {
	case err == nil:
		if _, ok := live.(*unstructured.Unstructured); !ok {
			// Without the copy, the cache leaves a typed object's kind unset; its TypeMeta is
			// live's own. (An unstructured object carries its kind in the shared map.)
			live.GetObjectKind().SetGroupVersionKind(desired.GetObjectKind().GroupVersionKind())
		}
		others := live.GetAnnotations()[ForeignFieldsAnnotation]
		if a.WholeObject && others != "" {
			foreign = strings.Split(others, ",")
		}
		digest := contentDigest(live)
		state := memoUnknown
		if len(foreign) == 0 && !a.Verify {
			if state = a.Memo.lookup(desired, fingerprint, live.GetResourceVersion(), digest); state == memoSame {
				return Unchanged, nil, nil
			}
		}
		if want, err = desiredContent(desired); err != nil {
			return Unchanged, nil, err
		}
		appliedAsWanted := appliedHashOf(live) == appliedHash(want)
		switch {
		case len(foreign) > 0:
			// What Landlord last applied is beside the point: someone else owns fields Landlord
			// does not. Before the apply: an apply would merge Landlord's set-like lists with
			// entries others added (a Warn beside Deny), which the API server may refuse outright.
			changed, err := a.replaceBody(ctx, desired, want)
			if err != nil {
				return Unchanged, nil, err
			}
			if changed {
				result = Repaired
			}
			// Otherwise the body was already what Landlord sets: an installer created the
			// object before the operator ran, and Landlord took over fields it set to the same
			// values. That is no repair.
		case bodyDropped(live) && !appliedAsWanted:
			// The desired object changed since it was applied: apply it, no need to read.
		case bodyDropped(live) && !a.Verify && (state == memoWanted || state == memoUnknown && others == ""):
			// Landlord applied exactly this, and the object has not changed since Landlord
			// last saw it match (or, unknown to a restarted operator, no one else owns a field
			// of it): the content is Landlord's.
			a.Memo.record(desired, fingerprint, live.GetResourceVersion(), digest)
			return Unchanged, nil, nil
		default:
			// Compare whole: the cache's object, or, when the cache keeps only its metadata, the
			// API server's.
			whole, err := a.whole(ctx, live)
			switch {
			case apierrors.IsNotFound(err):
				result = Created
			case err != nil:
				return Unchanged, nil, err
			}
			if whole != nil {
				if whole != live {
					server = whole
				}
				have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(whole)
				if err != nil {
					return Unchanged, nil, err
				}
				// Fields others own are theirs to change: no difference there is drift.
				if Contains(have, withoutPaths(want, a.othersPaths(desired))) {
					if whole.GetResourceVersion() != live.GetResourceVersion() {
						// The API server's copy is ahead of the cache's: remembered by the digest
						// the cache gives its content, so that a version in between with the
						// same content (Landlord's repair, before a status write the read
						// already carried) needs no read either.
						digest = a.cacheDigestOf(live, whole)
					}
					a.Memo.record(desired, fingerprint, whole.GetResourceVersion(), digest)
					return Unchanged, nil, nil
				}
				if appliedHash(have) == appliedHash(want) {
					// What Landlord last applied is what it wants now: someone else changed it.
					result = Repaired
				}
			}
		}
	case apierrors.IsNotFound(err):
		result = Created
		if desired.GetNamespace() == "" && !a.ReservedNames {
			if result, err = a.checkClusterScopedName(ctx, desired, live); err != nil {
				return Unchanged, nil, err
			}
		}
	default:
		return Unchanged, nil, err
	}
	if want == nil {
		if want, err = desiredContent(desired); err != nil {
			return Unchanged, nil, err
		}
	}
	u, err := a.send(ctx, desired, want, result == Created, server, force)
	if err != nil {
		return Unchanged, nil, err
	}
	// The answer carries everything desired (fields others own aside, which are not compared):
	// remembered at its resourceVersion, the cache's copy of this very write needs no comparison.
	a.Memo.record(desired, fingerprint, u.GetResourceVersion(), "")
	if result == Repaired && a.Repaired != nil {
		a.Repaired(desired, foreign)
	}
	return result, u, nil
}

// send applies want, and returns the API server's answer. To an object that exists, the fields
// others own (OwnedByOthers) that another field manager has written are not sent: what is left
// out depends on who owns what at the resourceVersion read (server, or read now), so the apply
// is made on the condition that the object has not changed since, and a write in between is
// read and decided again. Without force, a field another manager holds with another value makes
// the API server refuse the apply with a conflict rather than hand the field to Landlord.
func (a *Applier) send(ctx context.Context, desired client.Object, want map[string]any, created bool, server client.Object, force bool) (*unstructured.Unstructured, error) {
	paths := a.othersPaths(desired)
	if len(paths) > 0 && created && a.APIReader != nil {
		// The cache not holding the object is no proof that it does not exist: a shard taking a
		// tenant over, or an object whose label put it out of the cache, has its objects on the
		// API server with values others own. Sent whole, as to a new object, those values would
		// be the template's again.
		fresh := &unstructured.Unstructured{}
		fresh.SetGroupVersionKind(desired.GetObjectKind().GroupVersionKind())
		switch err := a.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), fresh); {
		case err == nil:
			created, server = false, fresh
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		sent, preconditioned := want, false
		if len(paths) > 0 && !created {
			if server == nil {
				if a.APIReader == nil {
					return nil, fmt.Errorf("%s %s has fields others own, and this applier cannot read who owns them", desired.GetObjectKind().GroupVersionKind().Kind, desired.GetName())
				}
				fresh := &unstructured.Unstructured{}
				fresh.SetGroupVersionKind(desired.GetObjectKind().GroupVersionKind())
				switch err := a.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), fresh); {
				case err == nil:
					server = fresh
				case !apierrors.IsNotFound(err):
					return nil, err
				}
			}
			if server != nil {
				sent = LeaveToOthers(want, paths, server.GetManagedFields())
				if meta, ok := sent["metadata"].(map[string]any); ok {
					meta["resourceVersion"] = server.GetResourceVersion()
					preconditioned = true
				}
			}
		}
		u := &unstructured.Unstructured{Object: sent}
		err := a.applyPatch(ctx, desired, u, force)
		if apierrors.IsConflict(err) && preconditioned && attempt < 3 {
			server = nil
			continue
		}
		return u, err
	}
}

// applyPatch sends u as a server-side apply and reads the API server's answer into it. An
// object Landlord builds from a Go type has no field its kind lacks, so the API server is asked
// not to parse the patch a second time, strictly, to warn of unknown fields (its default for
// a patch: about 3% of its CPU in a mass create, by its profile). A component's objects,
// rendered from templates an administrator writes, keep the warning.
func (a *Applier) applyPatch(ctx context.Context, desired client.Object, u *unstructured.Unstructured, force bool) error {
	opts := []client.PatchOption{client.FieldOwner(FieldOwner)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	if _, rendered := desired.(*unstructured.Unstructured); !rendered {
		opts = append(opts, client.FieldValidation(metav1.FieldValidationIgnore))
	}
	return a.Client.Patch(ctx, u, serverSideApply{}, opts...)
}

// serverSideApply is a server-side apply of the object as it stands, sent as a patch: the
// client's Apply takes no field validation.
type serverSideApply struct{}

func (serverSideApply) Type() types.PatchType { return types.ApplyYAMLPatchType }

func (serverSideApply) Data(obj client.Object) ([]byte, error) { return json.Marshal(obj) }

// replaceBody makes the object's body the desired one, whole, in one JSON patch, and takes the
// managed fields of everyone but Landlord off it. Server-side apply cannot remove a field
// another manager owns, and a manager that had also set some of Landlord's values would go on
// owning them, and be found again. The object is read from the API server first, for the
// managed fields the cache does not keep; the patch is refused if it changed since, and the
// reconcile is retried with the change in view rather than overwriting it unseen. It reports
// whether the body changed: not when the others' fields held what Landlord sets.
func (a *Applier) replaceBody(ctx context.Context, desired client.Object, want map[string]any) (bool, error) {
	if a.APIReader == nil {
		return false, fmt.Errorf("%s %s has fields someone else added, and this applier cannot read it to remove them", desired.GetObjectKind().GroupVersionKind().Kind, desired.GetName())
	}
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(desired.GetObjectKind().GroupVersionKind())
	if err := a.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), fresh); err != nil {
		return false, err
	}
	before := bodyOf(fresh.Object)
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": fresh.GetResourceVersion()}}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if bodyKey(k) {
			ops = append(ops, map[string]any{"op": "add", "path": "/" + k, "value": want[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fresh.Object)) {
		if _, ok := want[k]; !ok && bodyKey(k) {
			ops = append(ops, map[string]any{"op": "remove", "path": "/" + k})
		}
	}
	var ours []metav1.ManagedFieldsEntry
	for _, e := range fresh.GetManagedFields() {
		if landlordsApply(e) || !bodyOwnedBy(e) {
			ours = append(ours, e)
		}
	}
	if len(ours) == 0 {
		// An object someone else created (kubectl apply of config/policies before the operator
		// ran): an empty list would leave the managed fields as they are, so Landlord takes the
		// first entry, for its labels; the apply that follows gives it the rest.
		ours = []metav1.ManagedFieldsEntry{{
			Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, APIVersion: fresh.GetAPIVersion(),
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`),
		}}
	}
	ops = append(ops, map[string]any{"op": "replace", "path": "/metadata/managedFields", "value": ours})
	patch, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	if err := a.Client.Patch(ctx, fresh, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldOwner)); err != nil {
		return false, err
	}
	// The answer is the object as stored, the API server's defaults included, as before.
	return !equality.Semantic.DeepEqual(before, bodyOf(fresh.Object)), nil
}

// bodyOf is a copy of everything in an object but its metadata and status.
func bodyOf(obj map[string]any) map[string]any {
	body := map[string]any{}
	for k, v := range obj {
		if bodyKey(k) {
			body[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return body
}

// whole is the live object with its body: the cache's, or the API server's when the cache kept
// only its metadata.
func (a *Applier) whole(ctx context.Context, live client.Object) (client.Object, error) {
	if !bodyDropped(live) {
		return live, nil
	}
	if a.APIReader == nil {
		return nil, fmt.Errorf("%s %s is cached without its body, and this applier cannot read it", live.GetObjectKind().GroupVersionKind().Kind, live.GetName())
	}
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(live.GetObjectKind().GroupVersionKind())
	if err := a.APIReader.Get(ctx, client.ObjectKeyFromObject(live), fresh); err != nil {
		return nil, err
	}
	return fresh, nil
}

// cacheDigestOf is the content digest the cache records for whole, the API server's copy of
// live, worked out as the cache does it: of the kind's Go type, when the cache holds live as
// one. It is "" when it cannot be worked out; the memo then knows whole by its resourceVersion
// alone. A digest that differs from the cache's for equal content costs one more read, never a
// missed change: equal digests come only from equal content.
func (a *Applier) cacheDigestOf(live, whole client.Object) string {
	obj := whole
	if u, ok := whole.(*unstructured.Unstructured); ok {
		if _, cachedUnstructured := live.(*unstructured.Unstructured); !cachedUnstructured {
			typed, err := a.newLike(live)
			if err != nil {
				return ""
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				return ""
			}
			obj = typed
		}
	}
	digest, err := ContentDigest(obj)
	if err != nil {
		return ""
	}
	return digest
}

// bodyKey: top-level keys of an object other than its type, metadata and status.
func bodyKey(k string) bool {
	return k != "apiVersion" && k != "kind" && k != "metadata" && k != "status"
}

// appliedHash is the digest annotation of an object's content.
func appliedHash(content map[string]any) string {
	meta, _ := content["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	h, _ := annotations[HashAnnotation].(string)
	return h
}

// checkClusterScopedName reads a cluster-scoped object the cache does not hold (it may exist
// without Landlord's labels) and refuses to write it unless the same owner controls it.
func (a *Applier) checkClusterScopedName(ctx context.Context, desired, live client.Object) (Result, error) {
	err := a.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return Created, nil
	}
	if err != nil {
		return Unchanged, err
	}
	want := metav1.GetControllerOf(desired)
	have := metav1.GetControllerOf(live)
	if want == nil || have == nil || have.UID != want.UID {
		owner := "this owner"
		if want != nil {
			owner = fmt.Sprintf("%s %q", want.Kind, want.Name)
		}
		return Unchanged, &ConflictError{Kind: desired.GetObjectKind().GroupVersionKind().Kind, Name: desired.GetName(), Owner: owner}
	}
	// Ours, but missing from the cache: someone removed the label the cache selects on.
	return Updated, nil
}

func (a *Applier) newLike(obj client.Object) (client.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// Rendered component objects: read through the typed cache when the kind has a Go
		// type (one informer per kind, whoever else watches it), as unstructured otherwise.
		if typed, err := a.Client.Scheme().New(u.GroupVersionKind()); err == nil {
			if live, ok := typed.(client.Object); ok {
				return live, nil
			}
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		return live, nil
	}
	live, ok := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	if !ok {
		return nil, fmt.Errorf("cannot make a %T", obj)
	}
	return live, nil
}

// desiredContent is the object as sent to the server: no status, no server-set metadata, and
// the digest annotation of everything else.
func desiredContent(obj client.Object) (map[string]any, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(content, "status")
	meta, _ := content["metadata"].(map[string]any)
	delete(meta, "creationTimestamp")
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[HashAnnotation] = hex.EncodeToString(sum[:12])
	return content, nil
}

// Contains reports whether live carries every field of desired with the same value. Maps may
// hold more keys (defaults and fields other managers set); lists must match element by element,
// since the kinds Landlord writes treat them as atomic. An empty desired value matches anything.
func Contains(live, desired any) bool {
	switch d := desired.(type) {
	case nil:
		return true
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return len(d) == 0
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				if IsEmpty(dv) {
					continue
				}
				return false
			}
			if !Contains(lv, dv) {
				return false
			}
		}
		return true
	case []any:
		l, _ := live.([]any)
		if len(l) != len(d) {
			return false
		}
		for i := range d {
			if !Contains(l[i], d[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(live, desired)
	}
}

// IsEmpty is whether v, a value of an unstructured object, holds nothing: nil, an empty map,
// list or string. Contains treats such a desired value as absent.
func IsEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}
