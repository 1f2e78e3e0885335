// Command demohub prepares and shows the local hub for make demo.
//
//	demohub seed  adds the sample fleet of internal/demoseed: OCM ManagedClusters with region
//	              labels, their ManagedClusterSets (edge, airgap-stores) and the sets' bindings
//	              to the workspace; objects that exist already are left as they are
//	demohub show  prints the workspace's fleet objects: OCI registries (credential values
//	              redacted) and OCI storage routes
//	demohub freeports N  prints N free loopback TCP ports, for the controller's endpoints
//	demohub tfvars      prints the local fleet's registries (-registries) as TF_VAR_ exports
//	              for examples/local-fleet, for a shell to eval
//	demohub push REGISTRY REPO:TAG  pushes a small artifact to a registry of the local fleet
//	demohub chart REGISTRY REPO:VERSION  pushes a small Helm chart (a ConfigMap and a Service,
//	              internal/testbed's HelloChart) as `helm push` stores it
//	demohub replicate FROM TO REPO:TAG  copies an artifact between them, as replication would
//	              (the tag alone: not its signature)
//	demohub keygen DIR  writes a cosign key pair, DIR/cosign.pub and DIR/cosign.key (ECDSA
//	              P-256, PEM; the private key unencrypted)
//	demohub sign REGISTRY REPO:TAG KEY  signs an artifact in a registry of the local fleet with
//	              the private key KEY, as `cosign sign --key` does (tag sha256-<digest>.sig)
//	demohub stop REGISTRY  stops a registry of the local fleet, to show failover
//	demohub pull CLUSTER NAME REPO:TAG  asks a cluster to pull an artifact: a ManifestWork
//	              pull-NAME in its namespace carries the OCIPull NAME (internal/pullwork)
//	demohub status waits (up to a minute) until fleet-controller hub has reconciled every route
//	              of the workspace, then prints what it wrote: route status, one
//	              ClusterOCIStorage per cluster and the ManifestWork that carries each chain, as
//	              `kubectl get ocistorageroutes,clusterocistorages` would
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

func main() {
	kubeconfig := flag.String("hub", os.Getenv("KUBECONFIG"), "kubeconfig of the hub")
	workspace := flag.String("workspace", demoseed.Workspace, "workspace (namespace)")
	registries := flag.String("registries", ".fleet/registries.json", "the local fleet's registries (hack/localfleet -registries)")
	flag.Usage = usage
	flag.Parse()
	if flag.NArg() == 0 {
		usage()
		os.Exit(2)
	}
	ctx := context.Background()
	// Commands that need no hub.
	offline := map[string]func() error{
		"freeports": func() error { freePorts(flag.Arg(1)); return nil },
		"tfvars":    func() error { return tfVars(*registries) },
		"push":      func() error { return push(ctx, *registries, flag.Arg(1), flag.Arg(2)) },
		"chart":     func() error { return pushChart(ctx, *registries, flag.Arg(1), flag.Arg(2)) },
		"replicate": func() error { return replicate(ctx, *registries, flag.Arg(1), flag.Arg(2), flag.Arg(3)) },
		"stop":      func() error { return stopRegistry(*registries, flag.Arg(1)) },
		"keygen":    func() error { return keygen(flag.Arg(1)) },
		"sign":      func() error { return sign(ctx, *registries, flag.Arg(1), flag.Arg(2), flag.Arg(3)) },
	}
	if run, ok := offline[flag.Arg(0)]; ok {
		if err := run(); err != nil {
			log.Fatalf("demohub: %v", err)
		}
		return
	}
	switch flag.Arg(0) {
	case "pull", "seed", "show", "status":
	default:
		fmt.Fprintf(os.Stderr, "demohub: unknown command %q\n", flag.Arg(0))
		usage()
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("demohub: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		log.Fatalf("demohub: %v", err)
	}
	switch flag.Arg(0) {
	case "pull":
		err = requestPull(ctx, c, *workspace, flag.Arg(1), flag.Arg(2), flag.Arg(3))
	case "seed":
		err = seed(ctx, c, *workspace)
	case "show":
		err = show(ctx, c, *workspace)
	case "status":
		err = status(ctx, c, *workspace)
	}
	if err != nil {
		log.Fatalf("demohub: %v", err)
	}
}

// usage prints the commands (this file's doc comment) and the flags; -h prints it and exits 0, no
// command or an unknown one prints it and exits 2.
func usage() {
	w := flag.CommandLine.Output()
	fmt.Fprint(w, `usage: go run ./hack/demohub [-hub kubeconfig] [-workspace ns] [-registries file] <command> [args]

commands on the hub (-hub, default $KUBECONFIG):
  seed                            add the sample fleet: ManagedClusters, sets edge and airgap-stores, bindings
  show                            the workspace's OCI registries (credentials redacted) and routes
  status                          wait for fleet-controller hub, then print route status, ClusterOCIStorages, works
  pull CLUSTER NAME REPO:TAG      ask a cluster to pull an artifact (ManifestWork pull-NAME with OCIPull NAME)

commands on the local fleet's registries (-registries):
  push REGISTRY REPO:TAG          push a small artifact
  chart REGISTRY REPO:VERSION     push a small Helm chart as helm push stores it
  replicate FROM TO REPO:TAG      copy an artifact between registries, as replication would (not its signature)
  sign REGISTRY REPO:TAG KEY      sign an artifact with a cosign private key, as cosign sign --key does
  stop REGISTRY                   stop a registry, to show failover
  tfvars                          print the registries as TF_VAR_ exports for examples/local-fleet
  freeports N                     print N free loopback TCP ports
  keygen DIR                      write a cosign key pair, DIR/cosign.pub and DIR/cosign.key

flags:
`)
	flag.PrintDefaults()
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

func status(ctx context.Context, c client.Client, ws string) error {
	var routes v1alpha1.OCIStorageRouteList
	deadline := time.Now().Add(time.Minute)
	for {
		if err := c.List(ctx, &routes, client.InNamespace(ws)); err != nil {
			return fmt.Errorf("listing routes: %w", err)
		}
		if reconciled(routes.Items) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fleet-controller hub has not reconciled the routes of %s within a minute; is it running?", ws)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var storages v1alpha1.ClusterOCIStorageList
	if err := c.List(ctx, &storages, client.InNamespace(ws)); err != nil {
		return fmt.Errorf("listing ClusterOCIStorages: %w", err)
	}
	out := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer out.Flush()
	fmt.Fprintln(out, "OCI STORAGE ROUTE\tPRIORITY\tMATCHED\tREADY\tREASON")
	for _, r := range routes.Items {
		ready := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition)
		reason := ready.Reason
		if sh := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ShadowedCondition); sh != nil && sh.Status == metav1.ConditionTrue {
			reason += " (Shadowed: " + sh.Message + ")"
		}
		fmt.Fprintf(out, "%s\t%d\t%d\t%s\t%s\n", r.Name, r.Spec.Priority, r.Status.MatchedClusters, ready.Status, reason)
	}
	fmt.Fprintln(out, "\nCLUSTER OCI STORAGE\tROUTE\tCHAIN\tMATCHED BY\tREADY\tDELIVERED IN (ManifestWork)")
	for _, s := range storages.Items {
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		state := "<none>"
		if ready != nil {
			state = string(ready.Status) + "/" + ready.Reason
		}
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Status.Route, strings.Join(s.Status.Chain, ","), s.Status.MatchedBy, state, s.Status.Work)
	}
	return pushCredentials(ctx, out, c, ws)
}

// pushCredentials reads the chain every ManifestWork of the workspace carries and names the
// works that deliver a registry's push credentials (a registry without agent credentials).
func pushCredentials(ctx context.Context, out io.Writer, c client.Client, ws string) error {
	var works workv1.ManifestWorkList
	if err := c.List(ctx, &works, client.MatchingLabels{hub.WorkspaceLabel: ws}); err != nil {
		return fmt.Errorf("listing ManifestWorks: %w", err)
	}
	var push []string
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			var secret corev1.Secret
			if json.Unmarshal(m.Raw, &secret) != nil || secret.Kind != "Secret" {
				continue
			}
			chain, err := ocichain.Parse(secret.Data[ocichain.Key])
			if err != nil {
				return fmt.Errorf("ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
			}
			for _, r := range chain.Registries {
				if r.Password != "" {
					push = append(push, fmt.Sprintf("%s/%s (%s)", w.Namespace, w.Name, r.Name))
				}
			}
		}
	}
	fmt.Fprintf(out, "\n%d ManifestWorks carry the chains; push credentials in them: %d %s\n", len(works.Items), len(push), strings.Join(push, ", "))
	return nil
}

// reconciled reports whether every route has a status for its current generation.
func reconciled(routes []v1alpha1.OCIStorageRoute) bool {
	for _, r := range routes {
		if r.Status.ObservedGeneration != r.Generation || meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition) == nil {
			return false
		}
	}
	return len(routes) > 0
}

func freePorts(n string) {
	count, err := strconv.Atoi(n)
	if err != nil {
		log.Fatalf("demohub: freeports wants a number, not %q", n)
	}
	var ports []string
	for range count {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatalf("demohub: %v", err)
		}
		defer l.Close() // held until all are picked, so that they differ
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Println(strings.Join(ports, " "))
}
