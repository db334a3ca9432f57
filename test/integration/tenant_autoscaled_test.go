package integration

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
)

// autoscaledManifests is a component whose Deployment an autoscaler sizes: the template leaves
// replicas to the HorizontalPodAutoscaler it renders beside it.
const autoscaledManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: api
          image: {{ .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
          resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 64Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 3
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`

// A component's Deployment sized by an autoscaler: Kubernetes' own autoscaler (the cluster runs
// it) writes the replicas through the scale subresource, and Landlord, whose template leaves them
// out, neither puts them back nor counts the change as drift. The tenant stays Ready at the
// autoscaler's size, and a resync of it writes nothing.
func TestAnAutoscaledComponentIsLeftToItsAutoscaler(t *testing.T) {
	publish(t, "autoscaled", "1.0.0", autoscaledManifests, "")
	createTenant(t, newTenant("autoscaled", pin("autoscaled", "1.0.0", "")))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		d := renderedDeployment(g, "autoscaled", "api")
		// The template sets no replicas (Kubernetes' default is 1): 3 is the autoscaler's minimum.
		g.Expect(ptr.Deref(d.Spec.Replicas, 1)).To(Equal(int32(3)), "the autoscaler has not sized the Deployment")
	}).WithTimeout(2 * timeout).Should(Succeed())
	rolledOut(t, "autoscaled", "api")

	repairs := driftRepairs(g, "Deployment")
	waitIdle(t)
	before := op.Requests.Snapshot()
	resync(t, "autoscaled")
	waitIdle(t)
	made := tenantRequests(op.Requests.Snapshot().Sub(before))
	for key := range made {
		g.Expect(key).NotTo(HavePrefix("PATCH"), "a resync wrote: %s", made)
		g.Expect(key).NotTo(HavePrefix("PUT"), "a resync wrote: %s", made)
	}
	g.Expect(ptr.Deref(renderedDeployment(g, "autoscaled", "api").Spec.Replicas, 1)).To(Equal(int32(3)))
	g.Expect(driftRepairs(g, "Deployment")).To(Equal(repairs))
	g.Expect(tenantEvents(g, "autoscaled", "DriftRepaired")).To(BeEmpty())
}
