package hubresource

import "sync"

// planned records the objects the current plan creates or updates. Terraform plans a resource
// after the resources it references, so a check can see what the same plan adds next to what
// the hub already has (e.g. a route naming a registry that this plan creates).
type planned struct {
	mu     sync.Mutex
	models map[plannedKey]any
}

type plannedKey struct{ typeName, workspace, name string }

func (p *planned) note(typeName, workspace, name string, model any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.models == nil {
		p.models = map[plannedKey]any{}
	}
	p.models[plannedKey{typeName, workspace, name}] = model
}

// Planned returns the models of a resource type that this plan creates or updates in a
// workspace, by name. typeName is the Kind's TypeName, e.g. "oci_registry".
func Planned[M any](env *Env, typeName, workspace string) map[string]*M {
	env.planned.mu.Lock()
	defer env.planned.mu.Unlock()
	out := map[string]*M{}
	for k, v := range env.planned.models {
		if m, ok := v.(*M); ok && k.typeName == typeName && k.workspace == workspace {
			out[k.name] = m
		}
	}
	return out
}
