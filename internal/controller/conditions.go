package controller

import "github.com/umkim/terraform-provider-fleet/internal/kube"

// setCondition sets one condition stamped with the object's generation (kube.SetBool).
var setCondition = kube.SetBool

// keepConditions removes every condition whose type is not listed (kube.Keep).
var keepConditions = kube.Keep
