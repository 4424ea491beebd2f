package kubernetes

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// legacyShutdown bounds the legacy API's own shutdown: the demo API's
// drainTimeout (examples/demoapi/cmd/demoapi). In the native sidecar form
// the agent's shutdown comes after it.
const legacyShutdown = 10 * time.Second

// kustomize builds a kustomization as kubectl apply -k does, and decodes
// its objects strictly.
func kustomize(t *testing.T, dir string) *manifests {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decodeManifests(t, map[string][]byte{"kustomize build " + dir: out})
}

// TestNativeSidecar builds the native-sidecar overlay and checks that it
// changes what it says and nothing else: the agent's container, as it is,
// becomes an init container with restartPolicy Always; the Service reaches
// it by port number; the grace period covers the legacy API's shutdown and
// then the agent's. The rest is the base's, which TestManifests and TestPod
// check.
func TestNativeSidecar(t *testing.T) {
	base, overlay := kustomize(t, baseDir), kustomize(t, "native-sidecar")
	spec := overlay.deployment.Spec.Template.Spec
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Name != sidecarName {
		t.Fatalf("init containers %v: want %s alone", spec.InitContainers, sidecarName)
	}
	agent := &spec.InitContainers[0]
	if p := agent.RestartPolicy; p == nil || *p != corev1.ContainerRestartPolicyAlways {
		t.Error("the agent's restartPolicy is not Always, which makes an init container a sidecar")
	}

	// The base, with those changes made here.
	want := base.deployment.DeepCopy()
	wantSpec := &want.Spec.Template.Spec
	i := slices.IndexFunc(wantSpec.Containers, func(c corev1.Container) bool { return c.Name == sidecarName })
	moved := wantSpec.Containers[i]
	moved.RestartPolicy = agent.RestartPolicy
	wantSpec.Containers = slices.Delete(wantSpec.Containers, i, i+1)
	wantSpec.InitContainers = append(wantSpec.InitContainers, moved)
	wantSpec.TerminationGracePeriodSeconds = spec.TerminationGracePeriodSeconds
	wantService := base.service.DeepCopy()
	wantService.Spec.Ports[0].TargetPort = overlay.service.Spec.Ports[0].TargetPort
	for _, object := range []struct {
		name      string
		got, want any
	}{
		{"Deployment " + agentName, &overlay.deployment, want},
		{"Service " + agentName, &overlay.service, wantService},
		{"ConfigMap " + agentName, &overlay.configMap, &base.configMap},
		{"Secret " + agentName, &overlay.secret, &base.secret},
		{"Deployment " + redisName, &overlay.redis, &base.redis},
		{"Service " + redisName, &overlay.redisServic, &base.redisServic},
	} {
		if !equality.Semantic.DeepEqual(object.got, object.want) {
			t.Errorf("%s: the overlay changes more than it says:\n%s", object.name, diff.Diff(object.want, object.got))
		}
	}

	// The Service reaches the agent's A2A port by its number: before
	// Kubernetes 1.32 a named port of an init container is not found.
	target := overlay.service.Spec.Ports[0].TargetPort
	a2aPort := portNumber(t, container(t, &base.deployment, sidecarName), base.service.Spec.Ports[0].TargetPort)
	if target.Type != intstr.Int || portNumber(t, agent, target) != a2aPort {
		t.Errorf("the Service's targetPort %s: want the agent's A2A port %d, by number", target.String(), a2aPort)
	}

	// The kubelet sends the agent SIGTERM once the legacy API has exited;
	// the pod's grace period covers both shutdowns, one after the other.
	cfg := adapt(t, layOut(t, base, map[string]string{"REDIS_ADDRESS": "127.0.0.1:6379"}))
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if caddyGrace := cfg.Apps.HTTP.GracePeriod; grace < legacyShutdown+caddyGrace+shutdownMargin {
		t.Errorf("terminationGracePeriodSeconds %s: want the legacy API's shutdown (%s), then Caddy's grace_period %s, and %s more",
			grace, legacyShutdown, caddyGrace, shutdownMargin)
	}
}
