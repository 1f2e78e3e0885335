// Command demohub prepares and shows the local hub for make demo.
//
//	demohub seed  adds sample edge clusters: OCM ManagedClusters with region labels, two
//	              ManagedClusterSets (edge, airgap-stores) and their bindings to the workspace
//	demohub show  prints the workspace's fleet objects: OCI registries (credential values
//	              redacted) and OCI storage routes
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// sampleClusters are the demo's edge sites: name → cluster set and labels.
var sampleClusters = []struct {
	name, set string
	labels    map[string]string
}{
	{"eu-01", "edge", map[string]string{"region": "eu"}},
	{"eu-02", "edge", map[string]string{"region": "eu"}},
	{"eu-staging-01", "edge", map[string]string{"region": "eu", "tier": "staging"}},
	{"us-01", "edge", map[string]string{"region": "us"}},
	{"store-0201", "airgap-stores", map[string]string{"region": "apac"}},
	{"store-0203", "airgap-stores", map[string]string{"region": "apac"}},
}

func main() {
	kubeconfig := flag.String("hub", os.Getenv("KUBECONFIG"), "kubeconfig of the hub")
	workspace := flag.String("workspace", "fleet-default", "workspace (namespace)")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("demohub: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testbed.Scheme()})
	if err != nil {
		log.Fatalf("demohub: %v", err)
	}
	ctx := context.Background()
	switch flag.Arg(0) {
	case "seed":
		err = seed(ctx, c, *workspace)
	case "show":
		err = show(ctx, c, *workspace)
	default:
		err = fmt.Errorf("usage: demohub [-hub kubeconfig] [-workspace ns] seed|show")
	}
	if err != nil {
		log.Fatalf("demohub: %v", err)
	}
}

func seed(ctx context.Context, c client.Client, ws string) error {
	objs := []client.Object{}
	for _, set := range []string{"edge", "airgap-stores"} {
		objs = append(objs,
			&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
			&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: ws},
				Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}})
	}
	for _, sc := range sampleClusters {
		labels := map[string]string{clusterv1beta2.ClusterSetLabel: sc.set}
		for k, v := range sc.labels {
			labels[k] = v
		}
		objs = append(objs, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: sc.name, Labels: labels},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	fmt.Printf("seeded %d ManagedClusters in sets edge and airgap-stores, both bound to %s\n", len(sampleClusters), ws)
	return nil
}

// credentialKeys are shown by name only.
var credentialKeys = map[string]bool{"password": true, "agentPassword": true}

func show(ctx context.Context, c client.Client, ws string) error {
	out := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer out.Flush()

	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(ws)); err != nil {
		return fmt.Errorf("listing registries: %w", err)
	}
	fmt.Fprintln(out, "OCI REGISTRY (Secret)\tROLE\tDATA")
	for _, s := range secrets.Items {
		if s.Type != inventory.RegistrySecretType {
			continue
		}
		var fields []string
		for k, v := range s.Data {
			switch {
			case credentialKeys[k]:
				fields = append(fields, k+"=<redacted>")
			case k == "cacerts":
				fields = append(fields, k+"=<PEM>")
			default:
				fields = append(fields, k+"="+string(v))
			}
		}
		sort.Strings(fields)
		fmt.Fprintf(out, "%s\t%s\t%s\n", s.Name, s.Labels[inventory.RegistryRoleLabel], strings.Join(fields, " "))
	}

	var routes unstructured.UnstructuredList
	routes.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("OCIStorageRouteList"))
	if err := c.List(ctx, &routes, client.InNamespace(ws)); err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	if len(routes.Items) > 0 {
		fmt.Fprintln(out, "\nOCI STORAGE ROUTE\tPRIORITY\tSPEC")
		for _, r := range routes.Items {
			spec, _ := r.Object["spec"].(map[string]any)
			priority := spec["priority"]
			delete(spec, "priority")
			js, _ := json.Marshal(spec)
			fmt.Fprintf(out, "%s\t%v\t%s\n", r.GetName(), priority, js)
		}
	}
	return nil
}
