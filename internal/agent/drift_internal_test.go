package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// driftedField finds what the chart sets and the cluster changed, and only that: the fields
// the apiserver, controllers and webhooks add, the values it normalizes and the zero values it
// omits are no drift.
func TestDriftedField(t *testing.T) {
	const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  template:
    spec:
      hostNetwork: false
      containers:
      - name: web
        image: nginx:1.27
        args: [--port, "8080"]
        resources: {limits: {cpu: 500m, memory: 1Gi}, requests: {}}
        ports: [{containerPort: 8080}]
`
	const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, uid: x, generation: 3, labels: {app: web, extra: yes}, annotations: {deployment.kubernetes.io/revision: "1"}}
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  template:
    spec:
      containers:
      - name: istio-proxy
        image: proxy
      - name: web
        image: nginx:1.27
        imagePullPolicy: IfNotPresent
        args: [--port, "8080"]
        resources: {limits: {cpu: "0.5", memory: 1Gi}}
        ports: [{containerPort: 8080, protocol: TCP}]
status: {replicas: 2}
`
	cases := []struct {
		name           string
		rendered, live string
		edit           func(live map[string]any)
		want           string
	}{
		{name: "same, with what the cluster adds", rendered: deployment, live: liveDeployment},
		{name: "replicas edited", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) { l["spec"].(map[string]any)["replicas"] = int64(5) }, want: "spec.replicas"},
		{name: "image edited in the named container", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) { container(l, 1)["image"] = "nginx:evil" }, want: "spec.template.spec.containers[name=web].image"},
		{name: "container removed", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) {
				spec := l["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				spec["containers"] = spec["containers"].([]any)[:1]
			}, want: "spec.template.spec.containers[name=web]"},
		{name: "argument appended", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) { container(l, 1)["args"] = []any{"--port", "8080", "--debug"} }, want: "spec.template.spec.containers[name=web].args"},
		{name: "quantity changed", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) {
				container(l, 1)["resources"].(map[string]any)["limits"].(map[string]any)["cpu"] = "1"
			}, want: "spec.template.spec.containers[name=web].resources.limits.cpu"},
		{name: "label the chart sets changed", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) { l["metadata"].(map[string]any)["labels"].(map[string]any)["app"] = "other" }, want: "metadata.labels.app"},
		{name: "port list element by position", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) {
				container(l, 1)["ports"].([]any)[0].(map[string]any)["containerPort"] = int64(9090)
			},
			want: "spec.template.spec.containers[name=web].ports[0].containerPort"},
		{name: "a zero value the cluster keeps differs", rendered: deployment, live: liveDeployment,
			edit: func(l map[string]any) {
				l["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["hostNetwork"] = true
			},
			want: "spec.template.spec.hostNetwork"},
		{name: "secret stringData as data",
			rendered: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n",
			live:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: Opaque\ndata: {password: aHVudGVyMg==}\n"},
		{name: "secret data changed",
			rendered: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n",
			live:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: Opaque\ndata: {password: b3RoZXI=}\n", want: "data.password"},
		{name: "configmap data", rendered: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {greeting: hi}\n",
			live: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {greeting: bye}\n", want: "data.greeting"},
		{name: "status is not compared", rendered: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nstatus: {x: 1}\n",
			live: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
		{name: "number as a quantity", rendered: "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\nspec: {limits: [{type: Container, max: {cpu: 2}}]}\n",
			live: "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\nspec: {limits: [{type: Container, max: {cpu: \"2\"}}]}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rendered, live := decodeYAML(t, tc.rendered), decodeYAML(t, tc.live)
			if tc.edit != nil {
				tc.edit(live)
			}
			if got := driftedField(rendered, live); got != tc.want {
				t.Errorf("driftedField = %q, want %q", got, tc.want)
			}
		})
	}
}

func container(live map[string]any, i int) map[string]any {
	return live["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[i].(map[string]any)
}

// decodeYAML decodes as the apiserver's JSON does: integers as int64.
func decodeYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return toInt64(m).(map[string]any)
}

func toInt64(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = toInt64(e)
		}
	case []any:
		for i, e := range x {
			x[i] = toInt64(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// SetDrift counts every drifted object and lists the first ones that fit OCM's 1,024 bytes and
// MaxDriftObjects, whatever the length of their names.
func TestSetDriftBounded(t *testing.T) {
	long := strings.Repeat("n", 253)
	cases := []struct {
		name      string
		objects   int
		nameOf    func(int) string
		wantCount int32
		wantItems int
	}{
		{name: "none", objects: 0, nameOf: func(int) string { return "a" }, wantCount: 0, wantItems: 0},
		{name: "few", objects: 3, nameOf: func(i int) string { return "web-" + string(rune('a'+i)) }, wantCount: 3, wantItems: 3},
		{name: "many short", objects: 40, nameOf: func(int) string { return "web" }, wantCount: 40, wantItems: v1alpha1.MaxDriftObjects},
		{name: "long names", objects: 12, nameOf: func(int) string { return long }, wantCount: 12, wantItems: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			refs := make([]v1alpha1.ObjectRef, tc.objects)
			for i := range refs {
				ns := "apps"
				if tc.nameOf(i) == long {
					ns = strings.Repeat("s", 63)
				}
				refs[i] = v1alpha1.ObjectRef{Kind: "Deployment", Namespace: ns, Name: tc.nameOf(i)}
			}
			var s v1alpha1.FleetReleaseStatus
			s.SetDrift(refs)
			raw, _ := json.Marshal(s.Drift.Objects)
			if s.Drift.Count != tc.wantCount || len(s.Drift.Objects) != tc.wantItems || len(s.Drift.Objects) > 0 && len(raw) > v1alpha1.MaxFeedbackJSON {
				t.Errorf("drift count %d, %d objects (%d bytes); want %d, %d within %d bytes", s.Drift.Count, len(s.Drift.Objects), len(raw), tc.wantCount, tc.wantItems, v1alpha1.MaxFeedbackJSON)
			}
		})
	}
}
