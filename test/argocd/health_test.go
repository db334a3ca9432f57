package argocd

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// landlordKinds are the kinds whose status Landlord writes, each with a health check.
var landlordKinds = []string{"Tenant", "TenantPool", "TenantClaim", "ComponentRollout", "DatabaseServer", "TenantBackup", "TenantRestore", "TenantBackupSchedule", "BackupRequest", "RestoreRequest", "DatabaseMove", "TenantClass"}

// kstatusOnlyKinds are the kinds whose check is health/kstatus.lua: their status is its kstatus
// conditions alone (no suspend, no halt).
var kstatusOnlyKinds = []string{"TenantPool", "TenantClaim", "DatabaseServer", "TenantBackup", "TenantRestore", "TenantBackupSchedule", "BackupRequest", "RestoreRequest", "DatabaseMove", "TenantClass"}

// object is a recorded object of a kind: its generation, spec and status.
func object(kind string, generation int64, spec, status map[string]any) *unstructured.Unstructured {
	o := map[string]any{
		"apiVersion": "tenancy.landlord.dev/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "recorded", "generation": generation},
		"spec":     spec,
	}
	if kind == "Application" {
		o["apiVersion"] = "argoproj.io/v1alpha1"
	}
	if status != nil {
		o["status"] = status
	}
	return &unstructured.Unstructured{Object: o}
}

// cond is a condition as Landlord writes it, for generation.
func cond(typ, status, reason, message string, generation int64) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message, "observedGeneration": generation}
}

// observed is a status for observedGeneration with conditions.
func observed(generation int64, conditions ...map[string]any) map[string]any {
	list := make([]any, 0, len(conditions))
	for _, c := range conditions {
		list = append(list, c)
	}
	return map[string]any{"observedGeneration": generation, "conditions": list}
}

func assess(t *testing.T, obj *unstructured.Unstructured) Health {
	t.Helper()
	h, err := HealthOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// What kstatus says of every Landlord kind, each kind's check says too: the checks share their
// reading of the conditions, and this holds each of them to it.
func TestEveryLandlordCheckReadsKstatusConditions(t *testing.T) {
	ready := cond("Ready", "True", "Succeeded", "all is well", 2)
	cases := map[string]struct {
		generation int64
		status     map[string]any
		want       Health
	}{
		"an object with no status yet is Progressing": {
			generation: 1,
			want:       Health{Progressing, "Landlord has not reconciled generation 1 yet"},
		},
		"an object with the CRD's default observedGeneration of -1 is Progressing": {
			generation: 1, status: map[string]any{"observedGeneration": int64(-1)},
			want: Health{Progressing, "Landlord has not reconciled generation 1 yet"},
		},
		"an object Ready for an earlier generation is Progressing until the current one is observed": {
			generation: 3, status: observed(2, ready),
			want: Health{Progressing, "Landlord has not reconciled generation 3 yet"},
		},
		"an object Reconciling the current generation before it observes it is Progressing with the reason": {
			generation: 3, status: observed(2, cond("Ready", "False", "RollingOut", "web is rolling out", 3), cond("Reconciling", "True", "RollingOut", "web is rolling out", 3)),
			want: Health{Progressing, "RollingOut: web is rolling out"},
		},
		"a Stalled object is Degraded with the reason": {
			generation: 2, status: observed(2, cond("Ready", "False", "TemplateNotFound", "web-9.9.9 not found", 2), cond("Stalled", "True", "TemplateNotFound", "web-9.9.9 not found", 2)),
			want: Health{Degraded, "TemplateNotFound: web-9.9.9 not found"},
		},
		"a Reconciling object is Progressing with the reason": {
			generation: 2, status: observed(2, cond("Ready", "False", "Progressing", "1 of 3 ready", 2), cond("Reconciling", "True", "Progressing", "1 of 3 ready", 2)),
			want: Health{Progressing, "Progressing: 1 of 3 ready"},
		},
		"a Ready object is Healthy with the message": {
			generation: 2, status: observed(2, ready),
			want: Health{Healthy, "all is well"},
		},
		"an object not Ready, neither Reconciling nor Stalled, is Degraded": {
			generation: 2, status: observed(2, cond("Ready", "False", "Unreachable", "connection refused", 2)),
			want: Health{Degraded, "Unreachable: connection refused"},
		},
		"an object observed without a Ready condition is Progressing": {
			generation: 2, status: observed(2),
			want: Health{Progressing, "Landlord has not reported Ready yet"},
		},
	}
	for _, kind := range landlordKinds {
		for what, tc := range cases {
			t.Run(kind+": "+what, func(t *testing.T) {
				if got := assess(t, object(kind, tc.generation, map[string]any{}, tc.status)); got != tc.want {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
			})
		}
	}
}

// What only some kinds have: a Tenant's spec.suspend, a ComponentRollout's spec.halted, and the
// Application check the app of apps needs.
func TestChecksOfWhatOnlySomeKindsHave(t *testing.T) {
	suspended := cond("Suspended", "True", "Suspended", "spec.suspend is true: Landlord changes nothing", 4)
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want Health
	}{
		"a suspended tenant Landlord acknowledged is Suspended, with what it last observed": {
			obj:  object("Tenant", 4, map[string]any{"suspend": true}, observed(4, cond("Ready", "True", "Succeeded", "tenant is Active", 3), suspended)),
			want: Health{Suspended, "spec.suspend is true: Landlord changes nothing (last observed: Ready True, Succeeded: tenant is Active)"},
		},
		"a suspended tenant that was Stalled is Suspended, not Degraded": {
			obj: object("Tenant", 4, map[string]any{"suspend": true}, observed(4, cond("Ready", "False", "RenderFailed", "bad template", 3),
				cond("Stalled", "True", "RenderFailed", "bad template", 3), suspended)),
			want: Health{Suspended, "spec.suspend is true: Landlord changes nothing (last observed: Ready False, RenderFailed: bad template)"},
		},
		"a tenant just suspended is Progressing until Landlord observes it": {
			obj:  object("Tenant", 4, map[string]any{"suspend": true}, observed(3, cond("Ready", "True", "Succeeded", "tenant is Active", 3))),
			want: Health{Progressing, "Landlord has not reconciled generation 4 yet"},
		},
		"a halted rollout with waves to go is Suspended": {
			obj:  object("ComponentRollout", 2, map[string]any{"halted": true}, observed(2, cond("Ready", "False", "HaltedBySpec", "spec.halted is true: no wave starts", 2))),
			want: Health{Suspended, "HaltedBySpec: spec.halted is true: no wave starts"},
		},
		"a halted rollout whose waves are all done is Healthy": {
			obj:  object("ComponentRollout", 2, map[string]any{"halted": true}, observed(2, cond("Ready", "True", "RolloutComplete", "3 of 3 waves released", 2))),
			want: Health{Healthy, "3 of 3 waves released"},
		},
		"a halted rollout with too many failures is Degraded": {
			obj: object("ComponentRollout", 2, map[string]any{"halted": true}, observed(2, cond("Ready", "False", "TooManyFailures", "2 tenants failed", 2),
				cond("Stalled", "True", "TooManyFailures", "2 tenants failed", 2))),
			want: Health{Degraded, "TooManyFailures: 2 tenants failed"},
		},
		"an Application Argo CD has not assessed is Progressing": {
			obj:  object("Application", 1, map[string]any{}, nil),
			want: Health{Progressing, "Argo CD has not assessed this Application yet"},
		},
		"an Application being synced is Progressing, whatever its last health": {
			obj: object("Application", 1, map[string]any{}, map[string]any{
				"health": map[string]any{"status": "Healthy"}, "operationState": map[string]any{"phase": "Running", "message": "waiting for healthy state of apps/Deployment"}}),
			want: Health{Progressing, "waiting for healthy state of apps/Deployment"},
		},
		"an Application whose last sync failed is Degraded with the error": {
			obj: object("Application", 1, map[string]any{}, map[string]any{
				"health": map[string]any{"status": "Healthy"}, "operationState": map[string]any{"phase": "Failed", "message": "one or more objects failed to apply"}}),
			want: Health{Degraded, "the last sync failed: one or more objects failed to apply"},
		},
		"a synced Application is as healthy as its resources": {
			obj: object("Application", 1, map[string]any{}, map[string]any{
				"health": map[string]any{"status": "Degraded", "message": "tenant acme stalled"}, "operationState": map[string]any{"phase": "Succeeded"}}),
			want: Health{Degraded, "tenant acme stalled"},
		},
	}
	for what, tc := range cases {
		t.Run(what, func(t *testing.T) {
			if got := assess(t, tc.obj); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The VM is as strict as Argo CD's, so a check that passes here runs there.
func TestTheVMIsArgoCDs(t *testing.T) {
	obj := object("Tenant", 1, map[string]any{}, nil).Object
	cases := map[string]struct {
		check   Check
		want    Health
		wantErr string
	}{
		"a check using Lua's string library fails without useOpenLibs": {
			check: Check{Script: `return {status = string.upper("healthy")}`}, wantErr: "string",
		},
		"with useOpenLibs it may": {
			check: Check{Script: `return {status = "H" .. string.sub("xealthy", 2)}`, UseOpenLibs: true}, want: Health{Status: Healthy},
		},
		"a status Argo CD does not know is Unknown": {
			check: Check{Script: `return {status = "Fine"}`}, want: Health{Unknown, "Lua returned an invalid health status"},
		},
		"numbers are Lua numbers, and integers print as integers": {
			check: Check{Script: `return {status = "Healthy", message = "generation " .. obj.metadata.generation}`}, want: Health{Healthy, "generation 1"},
		},
		"a check that never ends is stopped": {
			check: Check{Script: `while true do end`}, wantErr: "context deadline exceeded",
		},
	}
	for what, tc := range cases {
		t.Run(what, func(t *testing.T) {
			got, err := Assess(tc.check, obj)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %+v, %v; want an error saying %q", got, err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Error(err)
			case got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The ConfigMap Argo CD reads is the one the example's Component makes: one key per file of
// health/, each holding exactly that file, for the kind the file is named after (kstatus.lua
// under each kind of kstatusOnlyKinds); and the rest of argocd-cm as Argo CD's installation had
// it.
func TestArgocdCmEmbedsExactlyTheHealthChecksOfTheExample(t *testing.T) {
	dir := filepath.Join(InstallDir(), "..", "..", "..", "..", "examples", "argocd", "argocd-cm", "health")
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupKind]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".lua")
		if name == "kstatus" {
			// One script for every kind whose status is its kstatus conditions alone.
			for _, kind := range kstatusOnlyKinds {
				want[schema.GroupKind{Group: "tenancy.landlord.dev", Kind: kind}] = string(data)
			}
			continue
		}
		gk := schema.GroupKind{Group: "tenancy.landlord.dev"}
		for _, kind := range landlordKinds {
			if strings.ToLower(kind) == name {
				gk.Kind = kind
			}
		}
		if name == "application" {
			gk = schema.GroupKind{Group: "argoproj.io", Kind: "Application"}
		}
		if gk.Kind == "" {
			t.Fatalf("%s is named after no kind the example checks", file)
		}
		want[gk] = string(data)
	}
	cm, err := ConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	checks, err := Checks(cm)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("every Landlord kind with a status, and Application, has a check", func(t *testing.T) {
		var kinds []string
		for gk := range want {
			kinds = append(kinds, gk.Kind)
		}
		if wantKinds := append(slices.Clone(landlordKinds), "Application"); !sameSet(kinds, wantKinds) {
			t.Errorf("health/ has checks for %v, want %v", kinds, wantKinds)
		}
	})
	t.Run("each key holds exactly its file, and no key holds anything else", func(t *testing.T) {
		for gk, script := range want {
			if got := checks[gk]; got.Script != script || got.UseOpenLibs {
				t.Errorf("argocd-cm's check for %s is not its file of health/ as it is, without useOpenLibs", gk)
			}
		}
		for gk := range checks {
			if _, ok := want[gk]; !ok {
				t.Errorf("argocd-cm has a check for %s that no file of health/ holds", gk)
			}
		}
	})
	t.Run("the merge keeps what Argo CD's installation set", func(t *testing.T) {
		if cm.Namespace != "argocd" || cm.Data["resource.ignoreResourceUpdatesEnabled"] != "true" || cm.Labels["app.kubernetes.io/part-of"] != "argocd" {
			t.Errorf("argocd-cm lost its namespace, labels or settings: %s/%s %v %v", cm.Namespace, cm.Name, cm.Labels, slices.Sorted(maps.Keys(cm.Data)))
		}
	})
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
