package localcluster

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Program is what a container of an image the local cluster knows runs: a local executable
// standing for the image's entrypoint. Nothing a pod spec names runs unless listed here.
type Program struct {
	// Entrypoint is the executable a container that names no command runs, with the
	// container's args: the image's ENTRYPOINT.
	Entrypoint string
	// Commands are the commands a container may name (its command's first word, as the pod
	// spec writes it), each mapped to a local executable. A container naming another fails.
	Commands map[string]string
	// Env is the image's environment (its ENV), under the container's own. PATH is
	// DefaultPath unless set here (HostPath makes one). The variables that decide which
	// executable or library runs (IsProgramEnv) come from here alone: a container that sets
	// one fails.
	Env map[string]string
	// Args, when set, is what the process's arguments must begin with, whichever executable
	// runs (Entrypoint, or one of Commands): []string{"job"} runs only `ENTRYPOINT job ...`.
	// A container whose command and args give other arguments fails. An entrypoint that does
	// more than one thing (the landlord binary, which is also the operator) names here the one
	// thing its Jobs may run.
	Args []string
}

// programEnvNames and programEnvPrefixes are the variables that decide which executable or
// library a process runs (IsProgramEnv).
var (
	programEnvNames = []string{
		// The directories commands are found in.
		"PATH",
		// glibc's character set conversion modules, shared libraries iconv loads.
		"GCONV_PATH",
		// Files and options a bash script runs before, or while, it runs.
		"BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4",
		// OpenSSL's configuration, engines and providers, which load shared libraries.
		"OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES",
		// The MariaDB and MySQL client library's plugins, shared libraries it loads.
		"LIBMYSQL_PLUGIN_DIR", "LIBMYSQL_PLUGINS", "MARIADB_PLUGIN_DIR",
	}
	programEnvPrefixes = []string{
		// The dynamic linker's: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, DYLD_INSERT_LIBRARIES...
		"LD_", "DYLD_",
		// bash's exported functions, which replace the commands of their name.
		"BASH_FUNC_",
	}
)

// IsProgramEnv reports whether a variable decides which executable or library a process runs:
// PATH; the dynamic linker's LD_* and DYLD_*; GCONV_PATH; bash's BASH_ENV, SHELLOPTS, BASHOPTS,
// PS4 and exported functions (BASH_FUNC_*); OpenSSL's OPENSSL_CONF, OPENSSL_ENGINES and
// OPENSSL_MODULES; the MariaDB client library's LIBMYSQL_PLUGIN_DIR, LIBMYSQL_PLUGINS and
// MARIADB_PLUGIN_DIR. Such a variable comes from a Program's Env alone: a container that sets
// one, by env or envFrom, fails, since with it a pod would run this machine's code of its
// choosing (a PATH reaching a mounted ConfigMap's script, an LD_PRELOAD of a library).
func IsProgramEnv(name string) bool {
	return slices.Contains(programEnvNames, name) ||
		slices.ContainsFunc(programEnvPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// DefaultPath is a process's PATH when its image's Program sets none: what container runtimes
// give a container.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// HostPath is a PATH for a Program that runs the named executables: the directories of this
// machine's PATH where each is first found, then DefaultPath's. A name found nowhere is left
// out: the program says what it misses, as it would in an image without it.
func HostPath(executables ...string) string {
	var dirs []string
	for _, name := range executables {
		if p, err := exec.LookPath(name); err == nil && filepath.IsAbs(p) {
			if dir := filepath.Dir(p); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	for _, dir := range filepath.SplitList(DefaultPath) {
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}

const (
	// defaultTerminationMessagePath is where a container writes why it ended, unless its
	// terminationMessagePath says otherwise.
	defaultTerminationMessagePath = "/dev/termination-log"
	// maxTerminationMessage bounds the message read from the termination message file, and
	// fallbackLines and fallbackBytes the end of the output that stands for it, as the
	// kubelet's do.
	maxTerminationMessage = 4096
	fallbackLines         = 80
	fallbackBytes         = 2048
)

// containerProcess is how a pod's container runs as a process of this machine.
type containerProcess struct {
	path string
	args []string
	// env is the process's whole environment: nothing of this process's own.
	env []string
	dir string
	// terminationFile is the file standing for the container's terminationMessagePath.
	terminationFile string
}

// prepareContainer materialises the pod's volumes under dir and makes one of its containers a
// process: the executable its image's Program names, the environment its env and envFrom
// build, every path under a mount (or the termination message path) moved to the directory
// standing for it.
func prepareContainer(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c corev1.Container, prog Program, dir string) (*containerProcess, error) {
	objects := &podObjects{cs: cs, namespace: pod.Namespace}
	paths, err := mountVolumes(ctx, objects, pod, c, dir)
	if err != nil {
		return nil, err
	}
	termination := cmp.Or(c.TerminationMessagePath, defaultTerminationMessagePath)
	terminationFile := paths.mapPath(termination)
	if terminationFile == termination {
		terminationFile = filepath.Join(dir, "termination-log")
		paths.mounts = append(paths.mounts, mount{path: termination, dir: terminationFile})
	}
	if err := os.WriteFile(terminationFile, nil, 0o600); err != nil {
		return nil, err
	}
	env, err := containerEnv(ctx, objects, pod, c)
	if err != nil {
		return nil, err
	}
	for _, e := range env {
		if IsProgramEnv(e.name) {
			return nil, fmt.Errorf("container %s sets %s, which decides what runs: on the local cluster it is image %s's alone (localcluster.IsProgramEnv lists such variables)", c.Name, e.name, c.Image)
		}
	}
	vars := map[string]string{"PATH": DefaultPath, "HOSTNAME": pod.Name}
	for k, v := range prog.Env {
		vars[k] = v
	}
	own := map[string]string{}
	for _, e := range env {
		own[e.name] = e.value
		vars[e.name] = paths.mapPath(e.value)
	}
	lookup := func(name string) (string, bool) { v, ok := own[name]; return v, ok }
	command := slices.Clone(c.Command)
	args := slices.Clone(c.Args)
	for _, list := range [][]string{command, args} {
		for i := range list {
			list[i] = paths.mapPath(expand(list[i], lookup))
		}
	}
	p := &containerProcess{terminationFile: terminationFile, dir: dir}
	if len(command) == 0 {
		if prog.Entrypoint == "" {
			return nil, fmt.Errorf("image %s has no entrypoint here, and container %s names no command", c.Image, c.Name)
		}
		p.path, p.args = prog.Entrypoint, args
	} else {
		local, ok := prog.Commands[c.Command[0]]
		if !ok {
			return nil, fmt.Errorf("image %s runs no command %q here (localcluster.Program.Commands lists what it runs)", c.Image, c.Command[0])
		}
		p.path, p.args = local, append(command[1:], args...)
	}
	if len(p.args) < len(prog.Args) || !slices.Equal(p.args[:len(prog.Args)], prog.Args) {
		// The arguments are not quoted: they may hold what the env expanded into them.
		return nil, fmt.Errorf("image %s runs on the local cluster only with arguments beginning %q, and container %s's command and args do not (localcluster.Program.Args)", c.Image, prog.Args, c.Name)
	}
	if c.WorkingDir != "" {
		if wd := paths.mapPath(c.WorkingDir); wd != c.WorkingDir {
			p.dir = wd
		}
	}
	for k, v := range vars {
		p.env = append(p.env, k+"="+v)
	}
	sort.Strings(p.env)
	return p, nil
}

// mount is a path of the container and the directory (or file) of this machine standing for it.
type mount struct{ path, dir string }

type pathMap struct{ mounts []mount }

// mapPath moves an absolute path under a mount to the directory standing for it; any other
// value is returned as it is.
func (m pathMap) mapPath(value string) string {
	best := -1
	for i, mt := range m.mounts {
		if (value == mt.path || strings.HasPrefix(value, strings.TrimSuffix(mt.path, "/")+"/")) &&
			(best < 0 || len(mt.path) > len(m.mounts[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return value
	}
	mt := m.mounts[best]
	return mt.dir + strings.TrimPrefix(value, strings.TrimSuffix(mt.path, "/"))
}

// mountVolumes writes the volumes the container mounts under dir/volumes: a secret's or a
// config map's keys as files (its items alone when it lists them), an emptyDir as an empty
// directory. Any other kind of volume fails the pod.
func mountVolumes(ctx context.Context, objects *podObjects, pod *corev1.Pod, c corev1.Container, dir string) (pathMap, error) {
	var paths pathMap
	written := map[string]string{}
	for _, vm := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 {
			return paths, fmt.Errorf("volume mount %s names no volume", vm.Name)
		}
		vdir, ok := written[vm.Name]
		if !ok {
			vdir = filepath.Join(dir, "volumes", vm.Name)
			if err := writeVolume(ctx, objects, pod.Spec.Volumes[i], vdir); err != nil {
				return paths, fmt.Errorf("volume %s: %w", vm.Name, err)
			}
			written[vm.Name] = vdir
		}
		if vm.SubPath != "" {
			if !filepath.IsLocal(vm.SubPath) {
				return paths, fmt.Errorf("volume mount %s: subPath %q leaves the volume", vm.Name, vm.SubPath)
			}
			vdir = filepath.Join(vdir, vm.SubPath)
		}
		paths.mounts = append(paths.mounts, mount{path: filepath.Clean(vm.MountPath), dir: vdir})
	}
	return paths, nil
}

func writeVolume(ctx context.Context, objects *podObjects, v corev1.Volume, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	switch {
	case v.EmptyDir != nil:
		return nil
	case v.Secret != nil:
		s, err := objects.secret(ctx, v.Secret.SecretName)
		if err != nil || s == nil {
			return optional(err, v.Secret.Optional, "secret", v.Secret.SecretName)
		}
		return writeKeys(dir, s.Data, v.Secret.Items, v.Secret.DefaultMode, v.Secret.Optional)
	case v.ConfigMap != nil:
		cm, err := objects.configMap(ctx, v.ConfigMap.Name)
		if err != nil || cm == nil {
			return optional(err, v.ConfigMap.Optional, "config map", v.ConfigMap.Name)
		}
		data := map[string][]byte{}
		for k, val := range cm.Data {
			data[k] = []byte(val)
		}
		for k, val := range cm.BinaryData {
			data[k] = val
		}
		return writeKeys(dir, data, v.ConfigMap.Items, v.ConfigMap.DefaultMode, v.ConfigMap.Optional)
	}
	return fmt.Errorf("only secret, configMap and emptyDir volumes are run on the local cluster")
}

// optional is nil for a missing object a reference marks optional, and otherwise says what
// is missing.
func optional(err error, isOptional *bool, kind, name string) error {
	if err != nil {
		return err
	}
	if isOptional != nil && *isOptional {
		return nil
	}
	return fmt.Errorf("%s %q not found", kind, name)
}

// writeKeys writes each key (or each listed item) as a file with its mode, less its execute
// bits: a volume's files are data here, never programs this machine would run.
func writeKeys(dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, isOptional *bool) error {
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			if isOptional != nil && *isOptional {
				continue
			}
			return fmt.Errorf("no key %q", item.Key)
		}
		if !filepath.IsLocal(item.Path) {
			return fmt.Errorf("item path %q leaves the volume", item.Path)
		}
		m := mode
		if item.Mode != nil {
			m = os.FileMode(*item.Mode)
		}
		m = m.Perm() &^ 0o111
		path := filepath.Join(dir, item.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, value, 0o600); err != nil {
			return err
		}
		if err := os.Chmod(path, m); err != nil {
			return err
		}
	}
	return nil
}

type envVar struct{ name, value string }

// containerEnv is the container's environment in Kubernetes' order: each envFrom source in
// turn (its prefix before each key), then each env entry, a later one replacing an earlier one
// of its name; an env value's $(VAR) reads the ones before it.
func containerEnv(ctx context.Context, objects *podObjects, pod *corev1.Pod, c corev1.Container) ([]envVar, error) {
	var env []envVar
	vars := map[string]string{}
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			env = append(env, envVar{name: name})
		}
		vars[name] = value
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.SecretRef != nil:
			s, err := objects.secret(ctx, from.SecretRef.Name)
			if err != nil || s == nil {
				if err := optional(err, from.SecretRef.Optional, "secret", from.SecretRef.Name); err != nil {
					return nil, fmt.Errorf("envFrom: %w", err)
				}
				continue
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		case from.ConfigMapRef != nil:
			cm, err := objects.configMap(ctx, from.ConfigMapRef.Name)
			if err != nil || cm == nil {
				if err := optional(err, from.ConfigMapRef.Optional, "config map", from.ConfigMapRef.Name); err != nil {
					return nil, fmt.Errorf("envFrom: %w", err)
				}
				continue
			}
			data = cm.Data
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !strings.Contains(from.Prefix+k, "=") {
				set(from.Prefix+k, data[k])
			}
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, e := range c.Env {
		value, ok, err := envValue(ctx, objects, pod, e, lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, value)
		}
	}
	for i := range env {
		env[i].value = vars[env[i].name]
	}
	return env, nil
}

// envValue is one env entry's value; ok is false for an optional reference to nothing.
func envValue(ctx context.Context, objects *podObjects, pod *corev1.Pod, e corev1.EnvVar, lookup func(string) (string, bool)) (string, bool, error) {
	from := e.ValueFrom
	if from == nil {
		return expand(e.Value, lookup), true, nil
	}
	switch {
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := objects.secret(ctx, ref.Name)
		if err == nil && s != nil {
			if v, ok := s.Data[ref.Key]; ok {
				return string(v), true, nil
			}
			err = fmt.Errorf("secret %q has no key %q", ref.Name, ref.Key)
			if ref.Optional != nil && *ref.Optional {
				err = nil
			}
			return "", false, err
		}
		return "", false, optional(err, ref.Optional, "secret", ref.Name)
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := objects.configMap(ctx, ref.Name)
		if err == nil && cm != nil {
			if v, ok := cm.Data[ref.Key]; ok {
				return v, true, nil
			}
			err = fmt.Errorf("config map %q has no key %q", ref.Name, ref.Key)
			if ref.Optional != nil && *ref.Optional {
				err = nil
			}
			return "", false, err
		}
		return "", false, optional(err, ref.Optional, "config map", ref.Name)
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath)
		return v, err == nil, err
	}
	return "", false, fmt.Errorf("only value, secretKeyRef, configMapKeyRef and fieldRef are run on the local cluster")
}

// fieldValue is what the downward API gives for a field path.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %s is not run on the local cluster", path)
}

// expand replaces each $(VAR) of s with the variable's value, as Kubernetes expands env
// values, commands and args: a variable not defined stays as written, and $$ is one $.
func expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// podObjects reads the Secrets and ConfigMaps of the pod's namespace, each once.
type podObjects struct {
	cs         kubernetes.Interface
	namespace  string
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

// secret is the named Secret, nil when there is none.
func (o *podObjects) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	s, err := o.cs.CoreV1().Secrets(o.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if o.secrets == nil {
		o.secrets = map[string]*corev1.Secret{}
	}
	o.secrets[name] = s
	return s, nil
}

// configMap is the named ConfigMap, nil when there is none.
func (o *podObjects) configMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	if cm, ok := o.configMaps[name]; ok {
		return cm, nil
	}
	cm, err := o.cs.CoreV1().ConfigMaps(o.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if o.configMaps == nil {
		o.configMaps = map[string]*corev1.ConfigMap{}
	}
	o.configMaps[name] = cm
	return cm, nil
}
