package sitesim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the simulator reads from a Node instead of probing hardware.
const (
	// AnnotationNVMe lists a Node's NVMe devices, comma-separated ("nvme0n1,nvme1n1"); without
	// it a Node has DefaultDevices, with it empty it has none.
	AnnotationNVMe = "sim.storage.simplyblock.io/nvme"
	// LabelFail makes probing the Node fail; the value is the reason the draft's message gives.
	LabelFail = "sim.storage.simplyblock.io/fail"
	// LabelControlPlane marks control-plane Nodes, which discovery skips unless
	// enableControlPlaneNodes is set.
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
)

// DefaultDevices are the NVMe devices of a Node without AnnotationNVMe.
var DefaultDevices = []string{"nvme0n1", "nvme1n1"}

// Node describes a Node object for CreateNodes.
type Node struct {
	Name string
	// ControlPlane labels the Node LabelControlPlane.
	ControlPlane bool
	// Devices are its NVMe devices; nil means DefaultDevices, empty none.
	Devices []string
	// Fail, if set, labels the Node LabelFail with this reason (a label value).
	Fail string
	// Labels are added to the Node's labels.
	Labels map[string]string
}

// Nodes creates worker Nodes of these names with DefaultDevices.
func Nodes(ctx context.Context, c client.Client, names ...string) error {
	nodes := make([]Node, len(names))
	for i, name := range names {
		nodes[i] = Node{Name: name}
	}
	return CreateNodes(ctx, c, nodes...)
}

// CreateNodes creates Node objects as a kubelet would register them (Ready, with capacity and a
// Hostname address), for an API server without kubelets. A Node that exists is left alone.
func CreateNodes(ctx context.Context, c client.Client, nodes ...Node) error {
	for _, n := range nodes {
		obj := nodeObject(n)
		status := obj.Status
		if err := c.Create(ctx, obj); apierrors.IsAlreadyExists(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		obj.Status = status // not every API server version keeps a Node's status on create
		if err := c.Status().Update(ctx, obj); err != nil {
			return fmt.Errorf("node %s status: %w", n.Name, err)
		}
	}
	return nil
}

func nodeObject(n Node) *corev1.Node {
	labels := map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux"}
	maps.Copy(labels, n.Labels)
	if n.ControlPlane {
		labels[LabelControlPlane] = ""
	}
	if n.Fail != "" {
		labels[LabelFail] = n.Fail
	}
	devices := n.Devices
	if devices == nil {
		devices = DefaultDevices
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"hugepages-2Mi":       resource.MustParse("4Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, Labels: labels,
			Annotations: map[string]string{AnnotationNVMe: strings.Join(devices, ",")},
		},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: n.Name}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// devicesOf returns a Node's NVMe devices (AnnotationNVMe).
func devicesOf(n *corev1.Node) []string {
	list, ok := n.Annotations[AnnotationNVMe]
	if !ok {
		return slices.Clone(DefaultDevices)
	}
	var devices []string
	for d := range strings.SplitSeq(list, ",") {
		if d = strings.TrimSpace(d); d != "" {
			devices = append(devices, d)
		}
	}
	return devices
}

// hostnameOf returns a Node's Hostname address, else its name.
func hostnameOf(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeHostName && a.Address != "" {
			return a.Address
		}
	}
	return n.Name
}
