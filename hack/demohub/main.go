// Command demohub prepares and shows the local hub for make demo.
//
//	demohub seed  adds the sample fleet of internal/demoseed: OCM ManagedClusters with region
//	              labels, their ManagedClusterSets (edge, airgap-stores) and the sets' bindings
//	              to the workspace; objects that exist already are left as they are
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

func main() {
	kubeconfig := flag.String("hub", os.Getenv("KUBECONFIG"), "kubeconfig of the hub")
	workspace := flag.String("workspace", demoseed.Workspace, "workspace (namespace)")
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
	if err := demoseed.Seed(ctx, c, ws); err != nil {
		return err
	}
	names := make([]string, len(demoseed.Clusters))
	for i, sc := range demoseed.Clusters {
		names[i] = sc.Name
	}
	fmt.Printf("seeded %d ManagedClusters (%s) in sets %s, each bound to workspace %s\n",
		len(names), strings.Join(names, ", "), strings.Join(demoseed.Sets, " and "), ws)
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
		if s.Type != registrysecret.Type {
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
		fmt.Fprintf(out, "%s\t%s\t%s\n", s.Name, s.Labels[registrysecret.RoleLabel], strings.Join(fields, " "))
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
