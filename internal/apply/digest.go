package apply

import (
	"encoding/json"
	"hash/fnv"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// cacheOnly are the annotations the cache sets itself: they are not part of the content.
var cacheOnly = map[string]bool{
	ForeignFieldsAnnotation: true, HealthAnnotation: true,
}

// CacheMarker stands in the operator's cache for the managed fields its transform drops: one
// entry, shared by every object, that no API server writes (its manager is not a name a client
// may send with an empty field set), so an object carrying it was shaped by the cache.
var CacheMarker = []metav1.ManagedFieldsEntry{{Manager: "landlord-cache"}}

// ShapedByCache is whether the operator's cache transform shaped m: the records it keeps in
// annotations are its own only then. Compared by value: an unstructured object keeps a copy of
// what it is given. Every entry the API server writes names its operation, so none is taken
// for the marker.
func ShapedByCache(m metav1.Object) bool {
	fields := m.GetManagedFields()
	return len(fields) == 1 && fields[0].Manager == CacheMarker[0].Manager && fields[0].Operation == ""
}

// HealthAnnotation is set in the operator's cache, never on the server, on rendered component
// objects kept without their body: kstatus's verdict on the whole object, worked out when it
// entered the cache (see the component package).
const HealthAnnotation = "tenancy.landlord.dev/health"

// ContentDigest digests what Landlord compares of obj. Built-in kinds are digested as protobuf
// (their generated encoders write map keys in order, so equal objects digest equally), others
// as JSON. Only digests from the same cache are ever compared with each other. A digest is its
// 16 bytes as a string, not their hex: the cache keeps one on every object it holds without
// its body, and only ever compares them.
func ContentDigest(obj metav1.Object) (string, error) {
	h := fnv.New128a()
	meta := metav1.ObjectMeta{Labels: obj.GetLabels(), OwnerReferences: obj.GetOwnerReferences()}
	for k, v := range obj.GetAnnotations() {
		if !cacheOnly[k] {
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[k] = v
		}
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "metadata" && k != "status" {
				content[k] = v
			}
		}
		metaMap := map[string]any{"labels": meta.Labels, "annotations": meta.Annotations, "ownerReferences": meta.OwnerReferences}
		content["metadata"] = metaMap
		if err := json.NewEncoder(h).Encode(content); err != nil {
			return "", err
		}
		return string(h.Sum(nil)), nil
	}
	// A shallow copy of the typed object with the metadata reduced to what is compared and the
	// status zeroed; it shares the original's maps and slices and is only encoded.
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return "", nil
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	if f := cp.Elem().FieldByName("ObjectMeta"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(meta))
	}
	// The cache leaves some objects' kind unset and sets others': the memo's key has the kind.
	if f := cp.Elem().FieldByName("TypeMeta"); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
	if f := cp.Elem().FieldByName("Status"); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
	if m, ok := cp.Interface().(interface{ Marshal() ([]byte, error) }); ok {
		raw, err := m.Marshal()
		if err != nil {
			return "", err
		}
		_, _ = h.Write(raw)
	} else if err := json.NewEncoder(h).Encode(cp.Interface()); err != nil {
		return "", err
	}
	return string(h.Sum(nil)), nil
}

// KeepInCache records, on an object the cache keeps without its body (only its metadata, and
// whatever part of its status Landlord reads), its content digest (ContentDigest: everything
// of the object Landlord compares, its status aside) and the digest annotation Landlord applied
// it with. Whether such an object changed since Landlord last looked is answered by the
// content digest: a status write moves the resourceVersion but not the digest, an edit moves
// both; the applier reads the object from the API server only when it must compare it whole.
//
// The record takes the place of the annotations: the cache's copy then needs no annotations map
// at all when it has no other annotation, about 360 bytes less for each of the many thousands
// of objects. The record is kept in metadata.selfLink, a
// field the API server has not set since Kubernetes 1.20 and that nothing in the operator
// reads; it exists only in the cache. It is the prefix, the digest's 16 bytes and the applied
// annotation's value, 41 bytes in all (72 with the digest in hex and words around it).
func KeepInCache(obj metav1.Object, digest string) {
	annotations := obj.GetAnnotations()
	applied := annotations[HashAnnotation]
	delete(annotations, HashAnnotation)
	if len(annotations) == 0 {
		annotations = nil
	}
	obj.SetAnnotations(annotations)
	if len(digest) != digestSize {
		// No digest to stand for the body: the object reads as one the cache keeps whole.
		obj.SetSelfLink("")
		return
	}
	obj.SetSelfLink(cacheRecordPrefix + digest + applied)
	// Nor its UID: 48 bytes of each of these objects, about 7 MiB at 10,000 tenants, that no
	// comparison reads. The one write that named it, a delete's precondition, looks the name up
	// on the API server first (writes.DeleteIfControlled). (controller-runtime's opt-in
	// read-your-writes consistency tracks deletes by the UID the cache shows: not for this cache.)
	obj.SetUID("")
}

// cacheRecordPrefix starts a record KeepInCache wrote; a selfLink that does not start with it
// is no record (the transform clears any other, and no API server writes a NUL byte in one).
const cacheRecordPrefix = "\x00"

// digestSize is the length of a content digest: a 128-bit hash.
const digestSize = 16

// cacheRecord is what KeepInCache recorded on obj: ok is false when it recorded nothing.
func cacheRecord(obj metav1.Object) (digest, applied string, ok bool) {
	rest, ok := strings.CutPrefix(obj.GetSelfLink(), cacheRecordPrefix)
	if !ok || len(rest) < digestSize {
		return "", "", false
	}
	return rest[:digestSize], rest[digestSize:], true
}

// bodyDropped reports whether the cache kept obj without its body.
func bodyDropped(obj metav1.Object) bool {
	return contentDigest(obj) != ""
}

// CachedDigest is the content digest KeepInCache recorded on obj, "" when it recorded none.
func CachedDigest(obj metav1.Object) string {
	digest, _, _ := cacheRecord(obj)
	return digest
}

func contentDigest(obj metav1.Object) string { return CachedDigest(obj) }

// appliedHashOf is the digest annotation Landlord applied obj with, as the cache keeps it.
func appliedHashOf(obj metav1.Object) string {
	if _, applied, ok := cacheRecord(obj); ok {
		return applied
	}
	return obj.GetAnnotations()[HashAnnotation]
}
