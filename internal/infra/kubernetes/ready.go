package kubernetes

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// readiness says whether a live object is ready, and if not what it waits
// for (shown in the operation's progress and in a timeout's detail).
// failed is set when it can never become ready.
func readiness(k *kind, u *unstructured.Unstructured) (ready bool, status string, failed bool) {
	i := func(f ...string) int64 { n, _, _ := unstructured.NestedInt64(u.Object, f...); return n }
	s := func(f ...string) string { v, _, _ := unstructured.NestedString(u.Object, f...); return v }
	observed := func() (bool, string) {
		if g, og := u.GetGeneration(), i("status", "observedGeneration"); og < g {
			return false, fmt.Sprintf("its controller has not seen generation %d yet", g)
		}
		return true, ""
	}
	specReplicas := func() int64 {
		n, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if !found {
			return 1
		}
		return n
	}
	switch k.gvk.Kind {
	case "Deployment":
		if ok, why := observed(); !ok {
			return false, why, false
		}
		if c := condition(u, "Progressing"); c != nil && c["reason"] == "ProgressDeadlineExceeded" {
			return false, fmt.Sprintf("rollout stuck: %v", c["message"]), true
		}
		want := specReplicas()
		upd, ready, avail, total := i("status", "updatedReplicas"), i("status", "readyReplicas"), i("status", "availableReplicas"), i("status", "replicas")
		st := fmt.Sprintf("%d/%d ready, %d updated, %d available", ready, want, upd, avail)
		return upd == want && ready == want && avail == want && total == want, st, false
	case "ReplicaSet", "StatefulSet":
		if ok, why := observed(); !ok {
			return false, why, false
		}
		want := specReplicas()
		ready, total := i("status", "readyReplicas"), i("status", "replicas")
		st := fmt.Sprintf("%d/%d ready", ready, want)
		if k.gvk.Kind == "StatefulSet" {
			if cur, up := s("status", "currentRevision"), s("status", "updateRevision"); up != "" && cur != up {
				return false, st + ", rolling update in progress", false
			}
		}
		return ready == want && total == want, st, false
	case "DaemonSet":
		if ok, why := observed(); !ok {
			return false, why, false
		}
		want, ready, upd := i("status", "desiredNumberScheduled"), i("status", "numberReady"), i("status", "updatedNumberScheduled")
		return ready == want && upd == want, fmt.Sprintf("%d/%d nodes ready", ready, want), false
	case "Pod":
		phase := s("status", "phase")
		switch phase {
		case "Succeeded":
			return true, "Succeeded", false
		case "Failed":
			return false, "Failed: " + s("status", "message"), true
		}
		if c := condition(u, "Ready"); c != nil && c["status"] == "True" {
			return true, "Running and Ready", false
		}
		why := phase
		if why == "" {
			why = "Pending"
		}
		if c := condition(u, "PodScheduled"); c != nil && c["status"] == "False" {
			why += fmt.Sprintf(" (not scheduled: %v)", c["message"])
		}
		if w := waitingReason(u); w != "" {
			why += " (" + w + ")"
		}
		return false, why, false
	case "Job":
		completions, found, _ := unstructured.NestedInt64(u.Object, "spec", "completions")
		if !found {
			completions = 1
		}
		if c := condition(u, "Failed"); c != nil && c["status"] == "True" {
			return false, fmt.Sprintf("failed: %v %v", c["reason"], c["message"]), true
		}
		done := i("status", "succeeded")
		if c := condition(u, "Complete"); c != nil && c["status"] == "True" {
			return true, fmt.Sprintf("complete, %d succeeded", done), false
		}
		return done >= completions, fmt.Sprintf("%d/%d completions", done, completions), false
	case "PersistentVolumeClaim":
		ph := s("status", "phase")
		return ph == "Bound", "phase " + orNone(ph), ph == "Lost"
	case "PersistentVolume":
		ph := s("status", "phase")
		return ph == "Available" || ph == "Bound", "phase " + orNone(ph), ph == "Failed"
	case "Namespace":
		ph := s("status", "phase")
		return ph == "Active", "phase " + orNone(ph), ph == "Terminating"
	case "Service":
		if s("spec", "type") == "ExternalName" {
			return true, "ExternalName", false
		}
		ip := s("spec", "clusterIP")
		return ip != "", "cluster IP " + orNone(ip), false
	}
	return true, "created", false
}

func orNone(s string) string {
	if s == "" {
		return "not set yet"
	}
	return s
}

func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m
		}
	}
	return nil
}

// waitingReason names why a pod's containers wait (ImagePullBackOff, ...).
func waitingReason(u *unstructured.Unstructured) string {
	var out []string
	for _, f := range []string{"initContainerStatuses", "containerStatuses"} {
		sts, _, _ := unstructured.NestedSlice(u.Object, "status", f)
		for _, st := range sts {
			m, _ := st.(map[string]any)
			r, _, _ := unstructured.NestedString(m, "state", "waiting", "reason")
			if r != "" && r != "ContainerCreating" && r != "PodInitializing" {
				out = append(out, fmt.Sprintf("%v: %s", m["name"], r))
			}
		}
	}
	return strings.Join(out, ", ")
}
