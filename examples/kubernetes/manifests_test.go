package kubernetes

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The names the manifests use, as the tests look them up.
const (
	agentName      = "orders-agent"
	redisName      = "orders-agent-redis"
	sidecarName    = "caddy-a2a"
	legacyName     = "legacy-api"
	caddyfileKey   = "Caddyfile"
	dockerfilePath = "../../xcaddy.Dockerfile"
	baseDir        = "base" // the sidecar's kustomization; native-sidecar/ is an overlay of it
)

// kustomization is the part of kustomization.yaml this example uses;
// decoding it strictly fails on anything else.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
}

// shutdownMargin is the room the tests want between the nested bounds of
// a pod's shutdown, for the final writes and the exit.
const shutdownMargin = 3 * time.Second

// manifests are the example's objects, decoded strictly.
type manifests struct {
	deployment, redis    appsv1.Deployment
	configMap            corev1.ConfigMap
	secret               corev1.Secret
	service, redisServic corev1.Service
}

// loadManifests decodes every resource of base/kustomization.yaml, as its
// file has it, into its k8s.io/api type; an unknown field, kind or
// duplicate fails.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	var k kustomization
	decodeFile(t, filepath.Join(baseDir, "kustomization.yaml"), &k)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	// Every manifest beside it is listed, so none is forgotten by kubectl apply -k.
	files, _ := filepath.Glob(filepath.Join(baseDir, "*.yaml"))
	for _, f := range files {
		if f := filepath.Base(f); f != "kustomization.yaml" && !slices.Contains(k.Resources, f) {
			t.Errorf("%s is not among the kustomization's resources", f)
		}
	}

	streams := map[string][]byte{}
	for _, file := range k.Resources {
		data, err := os.ReadFile(filepath.Join(baseDir, file))
		if err != nil {
			t.Fatalf("resource %s: %v", file, err)
		}
		streams[file] = data
	}
	return decodeManifests(t, streams)
}

// decodeManifests decodes every document of the YAML streams (by their
// source) into its k8s.io/api type: an unknown field, kind or duplicate
// fails, and so does a missing object.
func decodeManifests(t *testing.T, streams map[string][]byte) *manifests {
	t.Helper()
	m := new(manifests)
	seen := map[string]bool{}
	for source, stream := range streams {
		m.decode(t, source, stream, seen)
	}
	if len(seen) != 6 {
		t.Fatalf("the kustomization has %d of the 6 objects: %v", len(seen), seen)
	}
	return m
}

// decode decodes each document of a YAML stream into its field of m.
func (m *manifests) decode(t *testing.T, source string, stream []byte, seen map[string]bool) {
	t.Helper()
	for i, doc := range bytes.Split(stream, []byte("\n---\n")) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s, document %d: %v", source, i+1, err)
		}
		key := meta.APIVersion + " " + meta.Kind + " " + meta.Metadata.Name
		var into any
		switch key {
		case "apps/v1 Deployment " + agentName:
			into = &m.deployment
		case "apps/v1 Deployment " + redisName:
			into = &m.redis
		case "v1 ConfigMap " + agentName:
			into = &m.configMap
		case "v1 Secret " + agentName:
			into = &m.secret
		case "v1 Service " + agentName:
			into = &m.service
		case "v1 Service " + redisName:
			into = &m.redisServic
		default:
			t.Fatalf("%s, document %d: unexpected %s", source, i+1, key)
		}
		if seen[key] {
			t.Fatalf("%s: %s twice", source, key)
		}
		seen[key] = true
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("%s, %s: %v", source, key, err)
		}
	}
}

func decodeFile(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// container is the named container of d's pod.
func container(t *testing.T, d *appsv1.Deployment, name string) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == name {
			return c
		}
	}
	t.Fatalf("deployment %s has no container %s", d.Name, name)
	return nil
}

// portNumber resolves a probe's or Service's port (a number or a name)
// against c's ports.
func portNumber(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, p.String())
	return 0
}

// dockerfile is what the tests read of xcaddy.Dockerfile's final stage.
type dockerfile struct {
	base       string // the final stage's FROM
	copies     []string
	env        map[string]string
	workdir    string
	user       string
	expose     []string
	labels     map[string]string
	entrypoint []string
	cmd        []string
	xcaddy     string // the pinned xcaddy version
}

// readDockerfile reads xcaddy.Dockerfile's final stage. An instruction it
// does not know fails the test: the image built here (image/) makes that
// stage without Docker, and must learn each new instruction with this.
func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	df := dockerfile{env: map[string]string{}, labels: map[string]string{}}
	if m := regexp.MustCompile(`xcaddy/cmd/xcaddy@(v[\d.]+)`).FindSubmatch(data); m != nil {
		df.xcaddy = string(m[1])
	}
	stages := strings.Split(string(data), "\nFROM ")
	final := strings.Split(stages[len(stages)-1], "\n")
	df.base = final[0]
	execForm := func(instr, rest string, into *[]string) {
		if err := json.Unmarshal([]byte(rest), into); err != nil {
			t.Fatalf("xcaddy.Dockerfile: %s %s: not the exec form (a JSON array), which needs no shell: %v", instr, rest, err)
		}
	}
	for _, line := range final[1:] {
		instr, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch instr {
		case "", "#":
		case "COPY":
			fields := strings.Fields(rest)
			df.copies = append(df.copies, fields[len(fields)-1])
		case "ENV", "LABEL":
			into := map[string]map[string]string{"ENV": df.env, "LABEL": df.labels}[instr]
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				into[k] = v
			}
		case "WORKDIR":
			df.workdir = rest
		case "USER":
			df.user = rest
		case "EXPOSE":
			df.expose = strings.Fields(rest)
		case "ENTRYPOINT":
			execForm(instr, rest, &df.entrypoint)
		case "CMD":
			execForm(instr, rest, &df.cmd)
		default:
			t.Fatalf("xcaddy.Dockerfile: %s in the final stage: image/ does not make it, nor does this test read it", instr)
		}
	}
	return df
}

// pod is the sidecar's container as the kubelet makes it: the image's
// filesystem with the pod's volumes mounted over it, in a directory; the
// image's entrypoint and command; the image's env and the container's.
type pod struct {
	root       string   // stands for the container's /
	workdir    string   // the container's working directory, in root
	entrypoint string   // the image's entrypoint, in root
	args       []string // the image's command, its paths in root
	env        []string // the container's env, resolved as the kubelet does
}

// path is where a path of the container is here.
func (p *pod) path(inContainer string) string { return filepath.Join(p.root, inContainer) }

// layOut copies the image's files into a new directory, mounts the
// ConfigMap's and the Secret's files and an empty dir for each emptyDir
// where the Deployment mounts them, and resolves the sidecar's env. The
// Secret's placeholder for the signing key is replaced by a key made here:
// the manifest cannot hold a real one. override replaces env values (a
// cluster's DNS names, which loopback cannot resolve).
func layOut(t *testing.T, m *manifests, override map[string]string) *pod {
	t.Helper()
	c := container(t, &m.deployment, sidecarName)
	img := unpackedImage(t)
	p := &pod{root: t.TempDir()}
	copyTree(t, img.root, p.root)
	volumes := map[string]corev1.Volume{}
	for _, v := range m.deployment.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		// The volume hides what the image has there.
		dir := p.path(vm.MountPath)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v := volumes[vm.Name]
		switch {
		case v.ConfigMap != nil:
			for name, content := range m.configMap.Data {
				writeFile(t, filepath.Join(dir, name), content)
			}
		case v.Secret != nil:
			for _, item := range v.Secret.Items {
				content, ok := m.secret.StringData[item.Key]
				if !ok {
					t.Fatalf("secret volume %s: the Secret has no key %s", vm.Name, item.Key)
				}
				if strings.HasSuffix(item.Key, ".pem") {
					content = signingKeyPEM(t)
				}
				writeFile(t, filepath.Join(dir, item.Path), content)
			}
		case v.EmptyDir == nil:
			t.Fatalf("volume %s: a kind the test does not mount", vm.Name)
		}
	}
	cfg := img.config.Config
	p.workdir = p.path(cmp.Or(c.WorkingDir, cfg.WorkingDir))
	p.entrypoint = p.path(cfg.Entrypoint[0])
	for _, arg := range slices.Concat(cfg.Entrypoint[1:], cfg.Cmd) {
		if filepath.IsAbs(arg) {
			arg = p.path(arg)
		}
		p.args = append(p.args, arg)
	}
	// The image's env, its paths in root (PATH aside: the sidecar runs no
	// other program), then the container's, which wins.
	for _, kv := range cfg.Env {
		if name, value, _ := strings.Cut(kv, "="); name != "PATH" && filepath.IsAbs(value) {
			p.env = append(p.env, name+"="+p.path(value))
		}
	}
	for _, e := range c.Env {
		value := e.Value
		switch {
		case override[e.Name] != "":
			value = override[e.Name]
		case e.ValueFrom == nil:
		case e.ValueFrom.SecretKeyRef != nil:
			value = m.secret.StringData[e.ValueFrom.SecretKeyRef.Key]
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			value = fmt.Sprint(c.Resources.Limits.Memory().Value())
		default:
			t.Fatalf("env %s: a source the test does not resolve", e.Name)
		}
		p.env = append(p.env, e.Name+"="+value)
	}
	// HOME, as runtimes set it: the user's, from the image's /etc/passwd.
	_, _, home := img.user(t)
	p.env = append(p.env, "HOME="+p.path(home))
	return p
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// caddy runs the image's Caddy with args in p's working directory and env.
func (p *pod) caddy(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(p.entrypoint, args...)
	cmd.Dir, cmd.Env = p.workdir, p.env
	return cmd
}

// adapted is the sidecar's Caddyfile as Caddy's adapter makes it JSON.
type adapted struct {
	Apps struct {
		HTTP struct {
			GracePeriod time.Duration `json:"grace_period"`
			Servers     map[string]struct {
				Listen []string `json:"listen"`
				Routes []struct {
					Match []struct {
						Path []string `json:"path"`
					} `json:"match"`
					Handle []json.RawMessage `json:"handle"`
				} `json:"routes"`
			} `json:"servers"`
		} `json:"http"`
	} `json:"apps"`
}

// a2aHandler is what the tests read of the a2a handler's JSON.
type a2aHandler struct {
	Handler      string        `json:"handler"`
	Check        string        `json:"check"`
	URL          string        `json:"url"`
	Skills       string        `json:"skills"`
	DrainTimeout time.Duration `json:"drain_timeout"`
	Signing      *struct {
		Keys []struct {
			Key string `json:"key"`
		} `json:"keys"`
	} `json:"signing"`
}

func adapt(t *testing.T, p *pod) adapted {
	t.Helper()
	out, err := p.caddy(t, "adapt", "--config", p.args[slices.Index(p.args, "--config")+1], "--adapter", "caddyfile").Output()
	if err != nil {
		t.Fatalf("caddy adapt: %v\n%s", err, stderrOf(err))
	}
	var cfg adapted
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("caddy adapt: %v", err)
	}
	return cfg
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// handlers lists the handlers of every route of the server listening on
// port, each with the paths its route matches.
func handlers(t *testing.T, cfg adapted, port int32) (out []struct {
	paths []string
	h     a2aHandler
}) {
	t.Helper()
	for _, srv := range cfg.Apps.HTTP.Servers {
		if !slices.Contains(srv.Listen, fmt.Sprintf(":%d", port)) {
			continue
		}
		for _, r := range srv.Routes {
			var paths []string
			for _, m := range r.Match {
				paths = append(paths, m.Path...)
			}
			for _, raw := range r.Handle {
				var h a2aHandler
				if err := json.Unmarshal(raw, &h); err != nil {
					t.Fatal(err)
				}
				out = append(out, struct {
					paths []string
					h     a2aHandler
				}{paths, h})
			}
		}
		return out
	}
	t.Fatalf("no server of the Caddyfile listens on :%d", port)
	return nil
}

// the a2a handler of the Caddyfile, on the port the Service exposes.
func agentHandler(t *testing.T, m *manifests, cfg adapted) a2aHandler {
	t.Helper()
	c := container(t, &m.deployment, sidecarName)
	for _, h := range handlers(t, cfg, portNumber(t, c, m.service.Spec.Ports[0].TargetPort)) {
		if h.h.Handler == "a2a" {
			return h.h
		}
	}
	t.Fatal("no a2a handler on the Service's port")
	return a2aHandler{}
}

// TestManifests checks what matters about the manifests and how they fit
// the Caddyfile, the skills and the image; every manifest decodes strictly
// into its Kubernetes API type (loadManifests).
func TestManifests(t *testing.T) {
	m := loadManifests(t)
	c := container(t, &m.deployment, sidecarName)
	p := layOut(t, m, map[string]string{"REDIS_ADDRESS": "127.0.0.1:6379"})
	cfg := adapt(t, p)
	agent := agentHandler(t, m, cfg)

	t.Run("the ConfigMap's files load with caddy validate", func(t *testing.T) {
		cmd := p.caddy(t, append([]string{"validate"}, p.args[1:]...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("caddy validate: %v\n%s", err, out)
		}
	})

	t.Run("probes reach a2a_health on their paths and port", func(t *testing.T) {
		for _, probe := range []struct {
			name, check string
			p           *corev1.Probe
		}{{"readiness", "ready", c.ReadinessProbe}, {"liveness", "live", c.LivenessProbe}} {
			if probe.p == nil || probe.p.HTTPGet == nil {
				t.Fatalf("%s probe: not an HTTP GET", probe.name)
			}
			port := portNumber(t, c, probe.p.HTTPGet.Port)
			found := false
			for _, h := range handlers(t, cfg, port) {
				if slices.Contains(h.paths, probe.p.HTTPGet.Path) {
					found = h.h.Handler == "a2a_health" && (h.h.Check == probe.check || (probe.check == "ready" && h.h.Check == ""))
					break
				}
			}
			if !found {
				t.Errorf("%s probe GET :%d%s: no a2a_health %s handler there", probe.name, port, probe.p.HTTPGet.Path, probe.check)
			}
			if slices.ContainsFunc(m.service.Spec.Ports, func(sp corev1.ServicePort) bool { return portNumber(t, c, sp.TargetPort) == port }) {
				t.Errorf("%s probe port %d is exposed by the Service", probe.name, port)
			}
		}
	})

	t.Run("the grace period covers the drain", func(t *testing.T) {
		grace := time.Duration(*m.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		drain, caddyGrace := agent.DrainTimeout, cfg.Apps.HTTP.GracePeriod
		if drain == 0 || caddyGrace == 0 {
			t.Fatalf("drain_timeout %s, grace_period %s: set both, explicitly", drain, caddyGrace)
		}
		// Caddy's grace period must outlast the drain, and the pod's the
		// whole shutdown.
		if caddyGrace < drain+shutdownMargin || grace < caddyGrace+shutdownMargin {
			t.Errorf("drain_timeout %s, Caddy's grace_period %s, terminationGracePeriodSeconds %s: each must exceed the one before by %s",
				drain, caddyGrace, grace, shutdownMargin)
		}
	})

	t.Run("the card's url comes from the manifest's env", func(t *testing.T) {
		caddyfile := m.configMap.Data[caddyfileKey]
		if !regexp.MustCompile(`(?m)^\s*url \{\$A2A_PUBLIC_URL\}$`).MatchString(caddyfile) {
			t.Error("the Caddyfile's url is not {$A2A_PUBLIC_URL}")
		}
		want := envValue(t, c, "A2A_PUBLIC_URL")
		if agent.URL != want || !strings.HasPrefix(want, "https://") {
			t.Errorf("the agent's url %q; the manifest's A2A_PUBLIC_URL %q (https)", agent.URL, want)
		}
	})

	t.Run("the Secret has exactly the keys the pod reads", func(t *testing.T) {
		used := map[string]bool{}
		defined := map[string]bool{}
		for _, d := range []*appsv1.Deployment{&m.deployment, &m.redis} {
			for _, ctr := range d.Spec.Template.Spec.Containers {
				for _, e := range ctr.Env {
					defined[d.Name+"/"+ctr.Name+"/"+e.Name] = true
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						ref := e.ValueFrom.SecretKeyRef
						if ref.Name != m.secret.Name {
							t.Errorf("%s/%s env %s: Secret %s, want %s", d.Name, ctr.Name, e.Name, ref.Name, m.secret.Name)
						}
						used[ref.Key] = true
					}
				}
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					if v.Secret.SecretName != m.secret.Name {
						t.Errorf("volume %s: Secret %s, want %s", v.Name, v.Secret.SecretName, m.secret.Name)
					}
					for _, item := range v.Secret.Items {
						used[item.Key] = true
					}
				}
			}
		}
		for key := range m.secret.StringData {
			if !used[key] {
				t.Errorf("the Secret's key %s is read by no container", key)
			}
			delete(used, key)
		}
		for key := range used {
			t.Errorf("the pod reads the Secret's key %s, which it does not have", key)
		}
		// Every variable the Caddyfile and the skills read is set in the
		// sidecar's env: {$VAR} when the Caddyfile loads, {env.VAR} when a
		// setting is used.
		files := m.configMap.Data[caddyfileKey] + m.configMap.Data["skills.yaml"]
		for _, ref := range regexp.MustCompile(`\{(?:\$|env\.)([A-Z0-9_]+)`).FindAllStringSubmatch(files, -1) {
			if !defined[m.deployment.Name+"/"+sidecarName+"/"+ref[1]] {
				t.Errorf("the config reads %s, which the %s container's env does not set", ref[0]+"}", sidecarName)
			}
		}
		// Secrets in the config go through {env.VAR} (read at use, never in
		// the adapted JSON), never {$VAR}.
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && strings.Contains(files, "{$"+e.Name+"}") {
				t.Errorf("the secret %s is read as {$%s}, which writes it into the adapted config; use {env.%s}", e.Name, e.Name, e.Name)
			}
		}
		// The signing key is the Secret's file.
		if agent.Signing == nil || len(agent.Signing.Keys) != 1 {
			t.Fatal("the agent signs its card with one key")
		}
		key := filepath.Join(c.WorkingDir, agent.Signing.Keys[0].Key)
		if !slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool {
			return strings.HasPrefix(key, vm.MountPath+"/") && vm.Name == "secrets"
		}) {
			t.Errorf("the signing key %s is not in the Secret's mount", key)
		}
	})

	t.Run("the image and the pod agree", func(t *testing.T) {
		df := readDockerfile(t)
		if df.workdir != c.WorkingDir {
			t.Errorf("WORKDIR %s, workingDir %s", df.workdir, c.WorkingDir)
		}
		if len(c.Command) != 0 || len(c.Args) != 0 {
			t.Error("the sidecar overrides the image's command: keep them in one place")
		}
		config := df.cmd[slices.Index(df.cmd, "--config")+1]
		mounts := map[string]string{}
		for _, vm := range c.VolumeMounts {
			mounts[vm.Name] = vm.MountPath
		}
		if filepath.Dir(config) != mounts["config"] || filepath.Base(config) != caddyfileKey {
			t.Errorf("CMD runs %s; the ConfigMap is mounted at %s", config, mounts["config"])
		}
		if df.user != "nonroot:nonroot" || *m.deployment.Spec.Template.Spec.SecurityContext.RunAsUser != 65532 {
			t.Errorf("USER %s, runAsUser %d: want distroless's nonroot, 65532", df.user, *m.deployment.Spec.Template.Spec.SecurityContext.RunAsUser)
		}
		for _, cp := range c.Ports {
			if !slices.Contains(df.expose, fmt.Sprint(cp.ContainerPort)) {
				t.Errorf("port %d is not EXPOSEd", cp.ContainerPort)
			}
		}
		for _, name := range []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME"} {
			if !strings.HasPrefix(df.env[name], mounts["caddy-state"]+"/") {
				t.Errorf("%s=%s is not on the caddy-state volume (%s)", name, df.env[name], mounts["caddy-state"])
			}
		}
		ci, err := os.ReadFile("../../.ci/xcaddy-build")
		if err != nil {
			t.Fatal(err)
		}
		if df.xcaddy == "" || !strings.Contains(string(ci), "xcaddy@"+df.xcaddy) {
			t.Errorf("the Dockerfile's xcaddy %q is not the one .ci/xcaddy-build pins", df.xcaddy)
		}
	})

	t.Run("containers are locked down and sized", func(t *testing.T) {
		for _, d := range []*appsv1.Deployment{&m.deployment, &m.redis} {
			spec := d.Spec.Template.Spec
			if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
				t.Errorf("%s: the pod does not run as a non-root user", d.Name)
			}
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Errorf("%s: mounts a service account token it does not use", d.Name)
			}
			for _, ctr := range spec.Containers {
				sc := ctr.SecurityContext
				if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
					sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
					t.Errorf("%s/%s: want a read-only root, no privilege escalation, all capabilities dropped", d.Name, ctr.Name)
				}
				r := ctr.Resources
				if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() ||
					r.Limits.Memory().Cmp(*r.Requests.Memory()) < 0 {
					t.Errorf("%s/%s: want CPU and memory requests and a memory limit above the request", d.Name, ctr.Name)
				}
			}
		}
	})

	t.Run("the Services select the pods and reach their ports", func(t *testing.T) {
		for _, pair := range []struct {
			svc *corev1.Service
			d   *appsv1.Deployment
			ctr string
		}{{&m.service, &m.deployment, sidecarName}, {&m.redisServic, &m.redis, "redis"}} {
			labels := pair.d.Spec.Template.Labels
			for k, v := range pair.svc.Spec.Selector {
				if labels[k] != v {
					t.Errorf("Service %s selects %s=%s; the pods of %s have %q", pair.svc.Name, k, v, pair.d.Name, labels[k])
				}
			}
			for _, sp := range pair.svc.Spec.Ports {
				portNumber(t, container(t, pair.d, pair.ctr), sp.TargetPort)
			}
		}
		want := fmt.Sprintf("%s:%d", m.redisServic.Name, m.redisServic.Spec.Ports[0].Port)
		if got := envValue(t, c, "REDIS_ADDRESS"); got != want {
			t.Errorf("REDIS_ADDRESS %s; the Redis Service is %s", got, want)
		}
		legacy := container(t, &m.deployment, legacyName)
		if !strings.Contains(strings.Join(legacy.Args, " "), "127.0.0.1:9090") ||
			!strings.Contains(m.configMap.Data[caddyfileKey], "upstream http://127.0.0.1:9090") {
			t.Error("the sidecar does not call the legacy API where it listens (127.0.0.1:9090)")
		}
	})
}

func envValue(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("container %s has no env %s", c.Name, name)
	return ""
}
