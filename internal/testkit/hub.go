package testkit

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Namespaced creates namespace ns on the API server cfg points at, unless it exists, and returns a dynamic client
// of resource gvr in it, to write objects as they are (not as a Go type renders them).
func Namespaced(t testing.TB, cfg *rest.Config, gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(gvr).Namespace(ns)
}

// Columns are the columns of the table `kubectl get` prints.
type Columns struct {
	Names    []string
	Priority map[string]int32 // 1 and more: only with -o wide
}

// PrinterColumns asks the API server for the table `kubectl get <resource>` prints, as kubectl
// does, and returns its columns.
func PrinterColumns(t testing.TB, cfg *rest.Config, gvr schema.GroupVersionResource) Columns {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("%s: %v", gvr.Resource, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	c := Columns{Priority: map[string]int32{}}
	for _, d := range table.ColumnDefinitions {
		c.Names = append(c.Names, d.Name)
		c.Priority[d.Name] = d.Priority
	}
	return c
}
