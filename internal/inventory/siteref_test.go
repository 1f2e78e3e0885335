package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

func TestForeignLabels(t *testing.T) {
	mc := func(by, keys string) metav1.Object {
		return &metav1.ObjectMeta{Name: "c1", Annotations: map[string]string{v1alpha1.JoinedByAnnotation: by, v1alpha1.JoinLabelsAnnotation: keys}}
	}
	if got := foreignLabels(mc("team-a/join-c1", "fleet.site,capability.fleet.umkim.io/gpu"), "team-a"); got != nil {
		t.Errorf("the workspace's own join: %v, want none", got)
	}
	// A workspace whose name is a prefix of the joining one's is another workspace.
	got := foreignLabels(mc("team-ab/join-c1", "fleet.site,capability.fleet.umkim.io/gpu"), "team-a")
	if len(got) != 2 || got["fleet.site"] != "cluster join team-ab/join-c1" || got["capability.fleet.umkim.io/gpu"] == "" {
		t.Errorf("another workspace's join: %v", got)
	}
	if got := foreignLabels(&metav1.ObjectMeta{Name: "c1"}, "team-a"); got != nil {
		t.Errorf("no join: %v", got)
	}
}

func TestAssembleParsesReferencesOnce(t *testing.T) {
	secret := func(name, ref string) unstructured.Unstructured {
		data := map[string][]byte{}
		for k, v := range (registrysecret.Registry{Reference: ref, Role: registrysecret.RoleMirror}).Data() {
			data[k] = []byte(v)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ws", Labels: map[string]string{registrysecret.RoleLabel: registrysecret.RoleMirror}},
			Type: registrysecret.Type, Data: data}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
		if err != nil {
			t.Fatal(err)
		}
		return unstructured.Unstructured{Object: m}
	}
	ws := Assemble("ws", Lists{Secrets: []unstructured.Unstructured{
		secret("site", "zot.{{ .labels.site }}.stores.internal/fleet"),
		secret("bad-template", "zot.{{ .labels.site }}.internal"),
		secret("bad-literal", "oci://harbor.example.com"), // as before: delivered, the agent reports it
	}}, "tf")
	if r := ws.Registries["site"].Ref; r == nil || len(r.Labels()) != 1 || r.Labels()[0] != "site" {
		t.Errorf("site: %+v", ws.Registries["site"])
	}
	if _, ok := ws.Registries["bad-template"]; ok || len(ws.Invalid) != 1 || ws.Invalid[0].Name != "bad-template" {
		t.Errorf("a bad template is Invalid: registries %v, invalid %v", ws.Registries, ws.Invalid)
	}
	if r := ws.Registries["bad-literal"].Ref; r == nil || r.String() != "oci://harbor.example.com" {
		t.Errorf("bad-literal: %+v", ws.Registries["bad-literal"])
	}
}
