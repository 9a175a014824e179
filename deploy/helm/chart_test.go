package helm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/preflightmcp/preflight/gateway/config"
)

var update = flag.Bool("update", false, "rewrite the gateway config schema embedded in values.schema.json")

const (
	chartDir  = "preflight"
	release   = "preflight"
	namespace = "mcp"
	// configPath is where the Deployment tells the gateway its config is.
	configPath = "/etc/preflight/config.yaml"
	// kubeVersion is a current cluster's; the default (Helm's, 1.20) is rendered too.
	kubeVersion = "v1.34.0"
	// imageUser is the user the image runs as and dataDir its state directory
	// (release/internal/image: UID, GID, DataDir).
	imageUser = 65532
	dataDir   = "/data"
	// digest is an image digest as release/cmd/image prints it.
	digest = "sha256:8827e329142b1b809d3cbe49957c4d99765f30715905b6e7dd63d5dec9a0c2a1"
)

// chartCase is one set of values the chart must render.
type chartCase struct {
	name   string
	files  []string // values files, in order
	set    []string // --set values, after the files
	kube   string   // --kube-version; empty for Helm's default
	kinds  []string // the kinds rendered, sorted
	secret map[string]string
	// notes are lines NOTES.txt must hold.
	notes []string
	// image is the image the pods run; empty for the default, the chart's
	// repository at its appVersion.
	image string
	// dataClaim is the claim mounted at /data; empty for an emptyDir.
	dataClaim string
}

func cases() []chartCase {
	return []chartCase{
		{
			name:  "defaults",
			kinds: []string{"ConfigMap", "Deployment", "Service", "ServiceAccount"},
			notes: []string{"port-forward service/preflight 8080:80"},
		},
		{
			name:  "defaults on a current cluster",
			kube:  kubeVersion,
			kinds: []string{"ConfigMap", "Deployment", "Service", "ServiceAccount"},
		},
		{
			name:  "replicas with Redis and PostgreSQL",
			files: []string{"ci/replicas-values.yaml"},
			kube:  kubeVersion,
			kinds: []string{"ConfigMap", "Deployment", "Ingress", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"},
			notes: []string{"https://preflight.example.com/mcp", "Mcp-Session-Id"},
		},
		{
			name:  "autoscaled, existing Secret",
			files: []string{"ci/autoscaling-values.yaml"},
			kube:  kubeVersion,
			kinds: []string{"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service", "ServiceAccount"},
			// What the Secret managed outside the chart holds.
			secret: map[string]string{
				"redis-url":          "redis://redis:6379/1",
				"postgres-url":       "postgres://preflight@postgres/preflight",
				"request-state-keys": "k1:3q2+7wDtjcF5Ybm1Zm9yIHRlc3RzOiBub3QgYSBzZWNyZXQ=",
				"GITLAB_TOKEN":       "glpat-example",
			},
		},
		{
			name:  "autoscaled from one replica",
			set:   []string{"autoscaling.enabled=true", "autoscaling.minReplicas=1"},
			kinds: []string{"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Service", "ServiceAccount"},
			notes: []string{"WARNING: more than one replica without Redis"},
		},
		{
			name:  "pinned by digest",
			set:   []string{"image.digest=" + digest},
			kinds: []string{"ConfigMap", "Deployment", "Service", "ServiceAccount"},
			image: "ghcr.io/preflightmcp/preflight@" + digest,
		},
		{
			name:  "pushed to a registry of one's own",
			set:   []string{"image.repository=registry.example.com/mcp/preflight", "image.tag=0.2.0"},
			kinds: []string{"ConfigMap", "Deployment", "Service", "ServiceAccount"},
			image: "registry.example.com/mcp/preflight:0.2.0",
		},
		{
			name:      "state on a claim",
			set:       []string{"data.existingClaim=preflight-data"},
			kinds:     []string{"ConfigMap", "Deployment", "Service", "ServiceAccount"},
			dataClaim: "preflight-data",
		},
		{
			name:  "replicas without stores",
			set:   []string{"replicaCount=2"},
			kinds: []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"},
			notes: []string{"WARNING: more than one replica without Redis", "WARNING: more than one replica without shared requestState keys", "WARNING: more than one replica without PostgreSQL", "service.sessionAffinity=ClientIP"},
		},
	}
}

// TestLint is helm lint --strict on each case's values: no warning, no error.
func TestLint(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			vals := mergeValues(t, c.files, c.set)
			var kv *chartutil.KubeVersion
			if c.kube != "" {
				kv = parseKubeVersion(t, c.kube)
			}
			linter := lintChart(t, vals, kv)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestTemplate is helm template on each case's values; then it checks the objects.
func TestTemplate(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			manifest, notes, err := render(t, c.files, c.set, c.kube)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			objs := decode(t, manifest)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.kind)
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("kinds rendered = %v, want %v", kinds, c.kinds)
			}
			checkObjects(t, objs, c.secret)
			checkImage(t, objs, c.image, c.dataClaim)
			for _, want := range c.notes {
				if !strings.Contains(notes, want) {
					t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
				}
			}
		})
	}
}

// TestDocExamples renders each values file of docs/deploy.md (its blocks
// fenced ```yaml or ```yaml values) and checks the objects, so that the
// examples there stay valid.
func TestDocExamples(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for line := range strings.Lines(string(data)) {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (trimmed == "```yaml" || trimmed == "```yaml values"):
			cur = &strings.Builder{}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line)
		}
	}
	if len(blocks) < 2 {
		t.Fatalf("%d YAML blocks in docs/deploy.md, want the values examples", len(blocks))
	}
	// The examples write the requestState secret as a placeholder a
	// reader replaces (openssl rand -base64 32); the test does as well.
	secret := strings.NewReplacer("k1:SECRET", "k1:"+base64.StdEncoding.EncodeToString([]byte("placeholder for the docs' SECRET")))
	for i, block := range blocks {
		block := secret.Replace(block)
		t.Run(fmt.Sprint("example ", i+1), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(block), 0o600); err != nil {
				t.Fatal(err)
			}
			manifest, _, err := render(t, []string{file}, nil, kubeVersion)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, block)
			}
			checkObjects(t, decode(t, manifest), nil)
		})
	}
}

// TestRefused renders each file of testdata/bad, which helm template must
// refuse with the message its first line names ("# want: ..."); helm lint
// must refuse those the values schema refuses.
func TestRefused(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in testdata/bad (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("the first line must be # want: MESSAGE, is %q", first)
			}
			_, _, err = render(t, []string{file}, nil, kubeVersion)
			if err == nil {
				t.Fatalf("helm template accepted %s; want an error with %q", file, want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("helm template: %v\nwant an error with %q", err, want)
			}
			// helm lint checks the values against the schema, but only logs a
			// template's fail (Helm's lint mode), as it does for required.
			if strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
				linter := lintChart(t, mergeValues(t, []string{file}, nil), parseKubeVersion(t, kubeVersion))
				if linter.HighestSeverity < support.ErrorSev {
					t.Errorf("helm lint passed %s: %v", file, linter.Messages)
				}
			}
		})
	}
}

// TestEmbeddedConfigSchema checks that values.schema.json checks config with
// the gateway's own schema (go test -update copies it in), as relaxed by
// withVariables.
func TestEmbeddedConfigSchema(t *testing.T) {
	path := filepath.Join(chartDir, "values.schema.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var gateway any
	if err := json.Unmarshal(config.Schema(), &gateway); err != nil {
		t.Fatal(err)
	}
	want := withVariables(gateway)
	defs, _ := schema["$defs"].(map[string]any)
	if reflect.DeepEqual(defs["gatewayConfig"], want) {
		return
	}
	if !*update {
		t.Fatalf("%s: $defs.gatewayConfig is not gateway/config/schema.json as withVariables relaxes it: run go test -run TestEmbeddedConfigSchema -update", path)
	}
	if defs == nil {
		defs = map[string]any{}
		schema["$defs"] = defs
	}
	defs["gatewayConfig"] = want
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(schema); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// variable is a string the gateway reads as ${NAME} (or ${NAME:-default}).
var variable = map[string]any{
	"type":        "string",
	"pattern":     `\$\{`,
	"description": "An environment variable, read when the gateway loads the file.",
}

// withVariables returns the gateway's config schema with every value it
// constrains (a pattern, a set of values, a boolean) also allowed to be a
// ${...} reference: the gateway reads variables in any value before checking
// it, and a chart's config names its Secret's variables, such as
// redis.url: ${PREFLIGHT_REDIS_URL}, which the pattern of a URL refuses.
// Keys (propertyNames) and the conditions of if/then are left as they are.
func withVariables(schema any) any {
	switch s := schema.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range s {
			switch k {
			case "propertyNames", "if", "not", "patternProperties":
				out[k] = v
			default:
				out[k] = withVariables(v)
			}
		}
		_, pattern := s["pattern"]
		_, enum := s["enum"]
		if pattern || enum || s["type"] == "boolean" {
			return map[string]any{"anyOf": []any{out, variable}}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = withVariables(v)
		}
		return out
	}
	return schema
}

// lintChart runs Helm's linters with the log of its template engine (which
// reports a template's fail there, in lint mode) in the test's log.
func lintChart(t *testing.T, vals map[string]any, kube *chartutil.KubeVersion) support.Linter {
	t.Helper()
	log.SetOutput(testLog{t})
	defer log.SetOutput(os.Stderr)
	return lint.AllWithKubeVersion(chartDir, vals, namespace, kube)
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// mergeValues reads values files and --set values as the helm command does.
func mergeValues(t *testing.T, files, set []string) map[string]any {
	t.Helper()
	opts := values.Options{ValueFiles: files, Values: set}
	for i, f := range files {
		if !filepath.IsAbs(f) && !strings.HasPrefix(f, "testdata/") {
			opts.ValueFiles[i] = filepath.Join(chartDir, f)
		}
	}
	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func parseKubeVersion(t *testing.T, v string) *chartutil.KubeVersion {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// render does what helm template does, and returns the manifest and the notes.
func render(t *testing.T, files, set []string, kube string) (manifest, notes string, err error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.DryRun = true
	install.DryRunOption = "true"
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = namespace
	if kube != "" {
		install.KubeVersion = parseKubeVersion(t, kube)
	}
	rel, err := install.Run(chrt, mergeValues(t, files, set))
	if err != nil {
		return "", "", err
	}
	return rel.Manifest, rel.Info.Notes, nil
}

// object is one rendered Kubernetes object, decoded strictly into its type.
type object struct {
	kind, name, source string
	value              any
}

// decode splits a manifest and decodes each object into its API type,
// refusing unknown fields (a misspelt or misplaced key) and unknown kinds.
func decode(t *testing.T, manifest string) []object {
	t.Helper()
	var objs []object
	for _, doc := range releaseutil.SplitManifests(manifest) {
		source := "?"
		if line, _, _ := strings.Cut(doc, "\n"); strings.HasPrefix(line, "# Source: ") {
			source = strings.TrimPrefix(line, "# Source: ")
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		var v any
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			v = &appsv1.Deployment{}
		case "v1 Service":
			v = &corev1.Service{}
		case "v1 ConfigMap":
			v = &corev1.ConfigMap{}
		case "v1 Secret":
			v = &corev1.Secret{}
		case "v1 ServiceAccount":
			v = &corev1.ServiceAccount{}
		case "policy/v1 PodDisruptionBudget":
			v = &policyv1.PodDisruptionBudget{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			v = &autoscalingv2.HorizontalPodAutoscaler{}
		case "networking.k8s.io/v1 Ingress":
			v = &networkingv1.Ingress{}
		default:
			t.Fatalf("%s: unexpected object %s %s", source, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
			t.Fatalf("%s: not a valid %s: %v\n%s", source, meta.Kind, err, doc)
		}
		om := reflect.ValueOf(v).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta)
		for _, msg := range validation.IsDNS1123Subdomain(om.Name) {
			t.Errorf("%s: name %q: %s", source, om.Name, msg)
		}
		for k, val := range om.Labels {
			for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(val)...) {
				t.Errorf("%s: label %s=%q: %s", source, k, val, msg)
			}
		}
		objs = append(objs, object{kind: meta.Kind, name: om.Name, source: source, value: v})
	}
	slices.SortFunc(objs, func(a, b object) int { return strings.Compare(a.source, b.source) })
	return objs
}

// only returns the one object of type T, or nil when there is none.
func only[T any](t *testing.T, objs []object) *T {
	t.Helper()
	var found *T
	for _, o := range objs {
		if v, ok := o.value.(*T); ok {
			if found != nil {
				t.Fatalf("two objects of type %T", v)
			}
			found = v
		}
	}
	return found
}

// checkObjects checks what ties the objects together: selectors, ports,
// probes, the security context, the Secret's keys and the gateway config.
// secret is the content of a Secret managed outside the chart, if any.
func checkObjects(t *testing.T, objs []object, secret map[string]string) {
	dep := only[appsv1.Deployment](t, objs)
	if dep == nil {
		t.Fatal("no Deployment")
	}
	pod := dep.Spec.Template
	selector, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
		t.Errorf("Deployment selector %v does not select its pods (labels %v): %v", dep.Spec.Selector, pod.Labels, err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("pod has %d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]

	// The command line and the port it listens on.
	var http *corev1.ContainerPort
	for i, p := range c.Ports {
		if p.Name == "http" {
			http = &c.Ports[i]
		}
	}
	if http == nil {
		t.Fatalf("container has no port named http: %v", c.Ports)
	}
	wantArgs := []string{"serve", "-http", fmt.Sprintf("0.0.0.0:%d", http.ContainerPort), "-config", configPath}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args = %q, want %q", c.Args, wantArgs)
	}

	// Probes on /healthz at that port.
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s probe: want an HTTP GET, have %+v", name, p)
		case p.HTTPGet.Path != "/healthz":
			t.Errorf("%s probe path = %q, want /healthz", name, p.HTTPGet.Path)
		case p.HTTPGet.Port.String() != http.Name && p.HTTPGet.Port.IntValue() != int(http.ContainerPort):
			t.Errorf("%s probe port = %v, want the container's port %s (%d)", name, p.HTTPGet.Port.String(), http.Name, http.ContainerPort)
		}
	}

	// Non-root, read-only, no capabilities.
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Error("container has no securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Error("securityContext.runAsNonRoot is not true")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("securityContext.readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("securityContext.allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("securityContext.capabilities = %+v, want drop [ALL] and add nothing", sc.Capabilities)
	}
	// The image's user, which owns its /data; fsGroup makes a claim mounted there its group's.
	if psc := pod.Spec.SecurityContext; psc == nil || !isID(psc.RunAsUser, imageUser) || !isID(psc.RunAsGroup, imageUser) || !isID(psc.FSGroup, imageUser) {
		t.Errorf("pod securityContext = %+v, want runAsUser, runAsGroup and fsGroup %d, the image's user", psc, imageUser)
	}
	if sc != nil && sc.RunAsUser != nil && *sc.RunAsUser != imageUser {
		t.Errorf("container runs as user %d, not the image's %d", *sc.RunAsUser, imageUser)
	}

	// Where a read-only root filesystem lets the gateway write: its state
	// directory and /tmp, each a volume.
	for _, dir := range []string{dataDir, "/tmp"} {
		if v := mountedVolume(pod.Spec, c, dir); v == nil || (v.EmptyDir == nil && v.PersistentVolumeClaim == nil) {
			t.Errorf("%s is not a writable volume: %+v", dir, v)
		}
	}
	for _, e := range c.Env {
		if (e.Name == "HOME" || e.Name == "XDG_STATE_HOME") && e.Value != dataDir {
			t.Errorf("env %s=%q moves the state out of %s", e.Name, e.Value, dataDir)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v, want CPU and memory requests and a memory limit", c.Resources)
	}

	// The Service reaches the pods' port.
	svc := only[corev1.Service](t, objs)
	if svc == nil {
		t.Fatal("no Service")
	}
	if sel := labels.SelectorFromSet(svc.Spec.Selector); len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("Service selector %v does not select the pods (labels %v)", svc.Spec.Selector, pod.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != http.Name {
		t.Errorf("Service ports = %+v, want one with targetPort %s", svc.Spec.Ports, http.Name)
	}

	// The ServiceAccount the pods run as.
	if sa := only[corev1.ServiceAccount](t, objs); sa != nil && sa.Name != pod.Spec.ServiceAccountName {
		t.Errorf("pods run as %q, the chart's ServiceAccount is %q", pod.Spec.ServiceAccountName, sa.Name)
	}

	// Replicas, the disruption budget and the autoscaler.
	hpa := only[autoscalingv2.HorizontalPodAutoscaler](t, objs)
	replicas := int32(1)
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	if hpa != nil {
		if dep.Spec.Replicas != nil {
			t.Error("the Deployment sets replicas although an autoscaler scales it")
		}
		if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != dep.Name {
			t.Errorf("autoscaler scales %+v, want Deployment %s", hpa.Spec.ScaleTargetRef, dep.Name)
		}
		replicas = *hpa.Spec.MinReplicas
	}
	pdb := only[policyv1.PodDisruptionBudget](t, objs)
	switch {
	case replicas > 1 && pdb == nil:
		t.Errorf("%d replicas and no PodDisruptionBudget", replicas)
	case replicas <= 1 && pdb != nil:
		t.Error("a PodDisruptionBudget for one replica blocks every node drain")
	case pdb != nil:
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			t.Errorf("PodDisruptionBudget selector %v does not select the Deployment's pods (labels %v): %v", pdb.Spec.Selector, pod.Labels, err)
		}
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
			t.Errorf("PodDisruptionBudget minAvailable = %v, want 1", pdb.Spec.MinAvailable)
		}
	}

	// The Ingress sends /mcp to the Service.
	if ing := only[networkingv1.Ingress](t, objs); ing != nil {
		for _, r := range ing.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				if b := p.Backend.Service; b == nil || b.Name != svc.Name || b.Port.Name != svc.Spec.Ports[0].Name {
					t.Errorf("Ingress path %s goes to %+v, want the Service %s", p.Path, b, svc.Name)
				}
			}
		}
	}

	// The environment: values, and keys of the Secret.
	secretName, secretData := "", secret
	if s := only[corev1.Secret](t, objs); s != nil {
		secretName, secretData = s.Name, s.StringData
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if secretName != "" && ref.Name != secretName {
				t.Errorf("env %s reads the Secret %q, the chart's is %q", e.Name, ref.Name, secretName)
			}
			v, ok := secretData[ref.Key]
			if !ok {
				t.Errorf("env %s reads the key %q, which the Secret %q lacks", e.Name, ref.Key, ref.Name)
			}
			env[e.Name] = v
		default:
			t.Errorf("env %s: unexpected source %+v", e.Name, e.ValueFrom)
		}
	}

	// The config: mounted where the gateway is told to read it, and read by the
	// gateway's own parser with the pod's environment.
	cm := only[corev1.ConfigMap](t, objs)
	if cm == nil {
		t.Fatal("no ConfigMap")
	}
	data := mountedConfig(t, pod.Spec, c, cm)
	cfg, err := config.Parse("config.yaml", []byte(data), func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err != nil {
		t.Fatalf("the gateway refuses the ConfigMap's config: %v\n%s", err, data)
	}
	if url, ok := env["PREFLIGHT_REDIS_URL"]; ok {
		if cfg.Redis.URL != url {
			t.Errorf("config redis.url = %q, want the Secret's redis-url %q", cfg.Redis.URL, url)
		}
	} else if cfg.Redis.URL != "" {
		t.Errorf("config names Redis %q but the pods have no PREFLIGHT_REDIS_URL", cfg.Redis.URL)
	}
	if replicas > 1 {
		for name, s := range cfg.Servers {
			if s.Disclose && cfg.Disclosure.Store != config.StoreRedis {
				t.Errorf("%d replicas disclose server %s with disclosure grants in each pod's memory", replicas, name)
			}
		}
	}
}

// checkImage checks the image the pods run (want; empty for the chart's
// repository at its appVersion) and the volume at /data (the claim, or an
// emptyDir when claim is empty).
func checkImage(t *testing.T, objs []object, want, claim string) {
	t.Helper()
	if want == "" {
		chrt, err := loader.Load(chartDir)
		if err != nil {
			t.Fatal(err)
		}
		want = "ghcr.io/preflightmcp/preflight:" + chrt.Metadata.AppVersion
	}
	dep := only[appsv1.Deployment](t, objs)
	if dep == nil {
		t.Fatal("no Deployment")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != want {
		t.Errorf("image = %q, want %q", c.Image, want)
	}
	v := mountedVolume(dep.Spec.Template.Spec, c, dataDir)
	switch {
	case v == nil:
		t.Errorf("nothing mounted at %s", dataDir)
	case claim == "" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero()):
		t.Errorf("%s: %+v, want an emptyDir with a size limit", dataDir, v.VolumeSource)
	case claim != "" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim):
		t.Errorf("%s: %+v, want the claim %s", dataDir, v.VolumeSource, claim)
	}
}

// mountedVolume is the volume the container mounts, writable, at dir.
func mountedVolume(spec corev1.PodSpec, c corev1.Container, dir string) *corev1.Volume {
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir || m.ReadOnly || m.SubPath != "" {
			continue
		}
		for i, v := range spec.Volumes {
			if v.Name == m.Name {
				return &spec.Volumes[i]
			}
		}
	}
	return nil
}

func isID(id *int64, want int64) bool { return id != nil && *id == want }

// mountedConfig returns the ConfigMap's file that the container's -config
// names, following the volume mounted at its directory.
func mountedConfig(t *testing.T, spec corev1.PodSpec, c corev1.Container, cm *corev1.ConfigMap) string {
	t.Helper()
	dir, file := filepath.Split(configPath)
	var volume string
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == filepath.Clean(dir) {
			if m.SubPath != "" {
				t.Errorf("the config is mounted with subPath %q: the kubelet would never update it", m.SubPath)
			}
			volume = m.Name
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == volume && volume != "" {
			if v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
				t.Fatalf("volume %s at %s is not the ConfigMap %s: %+v", v.Name, dir, cm.Name, v.VolumeSource)
			}
			data, ok := cm.Data[file]
			if !ok {
				t.Fatalf("ConfigMap %s has no key %s", cm.Name, file)
			}
			return data
		}
	}
	t.Fatalf("nothing is mounted at %s, where -config %s is", dir, configPath)
	return ""
}
