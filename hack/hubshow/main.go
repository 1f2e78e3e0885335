// Command hubshow prints the fleet objects of a workspace on a hub: the OCI registries (Secret
// data keys listed, credential values redacted) and the OCI storage routes. make demo uses it to
// show what the provider wrote.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/umkim/terraform-provider-fleet/internal/provider"
)

// credentialKeys are shown by name only.
var credentialKeys = map[string]bool{"password": true, "agentPassword": true}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the hub")
	workspace := flag.String("workspace", provider.DefaultWorkspace, "workspace (namespace) to show")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("hubshow: %v", err)
	}
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cfg)
	out := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer out.Flush()

	secrets, err := kube.CoreV1().Secrets(*workspace).List(ctx, metav1.ListOptions{FieldSelector: "type=" + provider.OCIRegistrySecretType})
	if err != nil {
		log.Fatalf("hubshow: list registries: %v", err)
	}
	fmt.Fprintln(out, "OCI REGISTRY (Secret)\tROLE\tDATA")
	for _, s := range secrets.Items {
		var fields []string
		for k, v := range s.Data {
			if credentialKeys[k] {
				fields = append(fields, k+"=<redacted>")
			} else if k == "cacerts" {
				fields = append(fields, k+"=<PEM>")
			} else {
				fields = append(fields, k+"="+string(v))
			}
		}
		sort.Strings(fields)
		fmt.Fprintf(out, "%s\t%s\t%s\n", s.Name, s.Labels[provider.OCIRegistryRoleLabel], strings.Join(fields, " "))
	}

	routes, err := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "fleet.umkim.io", Version: "v1alpha1", Resource: "ocistorageroutes"}).
		Namespace(*workspace).List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatalf("hubshow: list routes: %v", err)
	}
	if len(routes.Items) > 0 {
		fmt.Fprintln(out, "\nOCI STORAGE ROUTE\tPRIORITY\tREGISTRIES")
		for _, r := range routes.Items {
			spec, _ := r.Object["spec"].(map[string]any)
			fmt.Fprintf(out, "%s\t%v\t%v\n", r.GetName(), spec["priority"], spec["registries"])
		}
	}
}
