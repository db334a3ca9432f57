// Package argocd runs the Argo CD health checks the example ships (examples/argocd/argocd-cm)
// as Argo CD runs them, so tests can assess Landlord's objects the way an Argo CD user sees them
// without an Argo CD. The checks are read from argocd-cm as kustomize builds it into an Argo CD
// installation, keyed as Argo CD keys them, and each runs in a gopher-lua VM set up as Argo CD's
// (util/lua): the package, base and table libraries only, unless the ConfigMap turns
// useOpenLibs on; the live object as the global obj; one second to answer; and its answer read
// as a health status, an unknown one reported as Unknown.
package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/hack/kustomize/build"
)

// Argo CD's health statuses.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// Health is what a check answers: Argo CD's health.HealthStatus.
type Health struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// Check is one kind's health check as argocd-cm configures it.
type Check struct {
	Script      string
	UseOpenLibs bool
}

// customizations is the prefix of argocd-cm's per-kind keys:
// resource.customizations.<type>.<group>_<kind>, or .<kind> for the core group.
const customizations = "resource.customizations."

// Checks reads the health checks of an argocd-cm ConfigMap by group and kind, as Argo CD's
// settings manager does (util/settings, appendResourceOverridesFromSplitKeys). A key it would
// refuse is an error.
func Checks(cm *corev1.ConfigMap) (map[schema.GroupKind]Check, error) {
	checks := map[schema.GroupKind]Check{}
	for key, value := range cm.Data {
		if !strings.HasPrefix(key, customizations) {
			continue
		}
		parts := strings.SplitN(key, ".", 4)
		if len(parts) < 4 {
			continue
		}
		gk, err := groupKind(parts[3])
		if err != nil {
			return nil, fmt.Errorf("argocd-cm key %s: %w", key, err)
		}
		check := checks[gk]
		switch parts[2] {
		case "health":
			check.Script = value
		case "useOpenLibs":
			if check.UseOpenLibs, err = strconv.ParseBool(value); err != nil {
				return nil, fmt.Errorf("argocd-cm key %s: %w", key, err)
			}
		case "actions", "ignoreDifferences", "ignoreResourceUpdates", "knownTypeFields":
			continue
		default:
			return nil, fmt.Errorf("argocd-cm key %s: Argo CD supports no customization %q", key, parts[2])
		}
		checks[gk] = check
	}
	return checks, nil
}

// groupKind is Argo CD's reading of the <group>_<kind> part of a key.
func groupKind(s string) (schema.GroupKind, error) {
	parts := strings.Split(s, "_")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return schema.GroupKind{Group: parts[0], Kind: parts[1]}, nil
	case len(parts) == 1 && s != "":
		return schema.GroupKind{Kind: s}, nil
	}
	return schema.GroupKind{}, fmt.Errorf("%q is not <group>_<kind> nor <kind>", s)
}

// InstallDir is Argo CD's installation as a user's kustomization makes it with the example's
// argocd-cm Component: argocd-cm stands in for Argo CD's install manifests.
func InstallDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "argocd-install")
}

// ConfigMap builds InstallDir with kustomize and returns its argocd-cm.
func ConfigMap() (*corev1.ConfigMap, error) {
	out, err := build.Dir(InstallDir())
	if err != nil {
		return nil, err
	}
	for doc := range strings.SplitSeq(string(out), "\n---\n") {
		cm := &corev1.ConfigMap{}
		if err := yaml.Unmarshal([]byte(doc), cm); err != nil {
			return nil, err
		}
		if cm.Kind == "ConfigMap" && cm.Name == "argocd-cm" {
			return cm, nil
		}
	}
	return nil, fmt.Errorf("%s builds no ConfigMap argocd-cm", InstallDir())
}

// shipped are the checks of the built argocd-cm, read once.
var shipped = sync.OnceValues(func() (map[schema.GroupKind]Check, error) {
	cm, err := ConfigMap()
	if err != nil {
		return nil, err
	}
	return Checks(cm)
})

// HealthOf is the health Argo CD gives obj with the example's argocd-cm. A kind it has no check
// for is an error: Argo CD would show no health for it at all.
func HealthOf(obj *unstructured.Unstructured) (Health, error) {
	checks, err := shipped()
	if err != nil {
		return Health{}, err
	}
	gk := obj.GroupVersionKind().GroupKind()
	check, ok := checks[gk]
	if !ok || check.Script == "" {
		return Health{}, fmt.Errorf("argocd-cm has no health check for %s", gk)
	}
	return Assess(check, obj.Object)
}

// Assess runs a health check on an object's content as Argo CD does (util/lua: runLua and
// ExecuteHealthLua).
func Assess(check Check, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !check.UseOpenLibs})
	defer l.Close()
	// Argo CD opens these, and a "safe" os library of its own that Landlord's checks do not use:
	// a check that did would fail here rather than pass where Argo CD might not.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(check.Script); err != nil {
		return Health{}, err
	}
	switch answer := l.Get(-1).(type) {
	case *lua.LTable:
		data, err := json.Marshal(fromLua(answer))
		if err != nil {
			return Health{}, err
		}
		var h Health
		if err := json.Unmarshal(data, &h); err != nil {
			// An empty table encodes as [] and means no health, as in Argo CD.
			var empty []any
			if json.Unmarshal(data, &empty) == nil && len(empty) == 0 {
				return Health{}, nil
			}
			return Health{}, fmt.Errorf("the check answered %s: %w", data, err)
		}
		switch h.Status {
		case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
			return h, nil
		}
		return Health{Status: Unknown, Message: "Lua returned an invalid health status"}, nil
	case *lua.LNilType:
		return Health{}, nil
	default:
		return Health{}, errors.New("expect table output from Lua script, not " + answer.Type().String())
	}
}

// toLua is Argo CD's decodeValue: JSON values as Lua values, every number a Lua number.
func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case json.Number:
		return lua.LString(v)
	case string:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

// fromLua reads a Lua value back as JSON does (layeh.com/gopher-json, which Argo CD encodes the
// answer with): a table with keys 1..n is an array, one with string keys an object.
func fromLua(value lua.LValue) any {
	switch v := value.(type) {
	case lua.LBool:
		return bool(v)
	case lua.LNumber:
		return float64(v)
	case lua.LString:
		return string(v)
	case *lua.LTable:
		if n := v.MaxN(); n > 0 || isEmpty(v) {
			arr := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				arr = append(arr, fromLua(v.RawGetInt(i)))
			}
			return arr
		}
		obj := map[string]any{}
		v.ForEach(func(k, item lua.LValue) {
			if s, ok := k.(lua.LString); ok {
				obj[string(s)] = fromLua(item)
			}
		})
		return obj
	}
	return nil
}

func isEmpty(t *lua.LTable) bool {
	empty := true
	t.ForEach(func(lua.LValue, lua.LValue) { empty = false })
	return empty
}
